// Parallel traversals of a UTS tree: TBB, OpenMP tasks and Rill, all with the same shape. A task
// visits a node, spawns children 1..k-1 as tasks of their own and goes on with child 0 itself, so
// a chain of first children costs one task. Statistics go to per-thread blocks (one cache line each),
// summed once the traversal is over: no shared counter is touched per node.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

#include "uts/tree.hpp"

namespace uts {

// One statistics block per thread that takes part in one traversal.
class thread_counts {
 public:
  thread_counts();
  thread_counts(const thread_counts&) = delete;
  thread_counts& operator=(const thread_counts&) = delete;

  // The calling thread's block. The reference stays valid for the traversal; callers must not keep
  // it across a point where their task could move to another thread (none of ours suspends).
  counts& local();
  // The sum over threads; call once every task of the traversal has finished.
  counts total() const;

 private:
  struct alignas(64) block {
    counts c;
  };
  std::uint64_t id_;
  mutable std::mutex mutex_;
  std::deque<block> blocks_;
};

// Visits the chain of first children from n, handing every other child to spawn(child) after
// announcing their number with spawn.expect(k - 1).
template <class Spawn>
void walk(const tree& t, node n, counts& c, Spawn&& spawn) {
  for (;;) {
    const int k = t.num_children(n);
    ++c.nodes;
    if (static_cast<std::uint64_t>(n.height) > c.depth) c.depth = static_cast<std::uint64_t>(n.height);
    if (k == 0) {
      ++c.leaves;
      return;
    }
    spawn.expect(k - 1);
    for (int i = k - 1; i >= 1; --i) spawn(t.child(n, i));
    n = t.child(n, 0);
  }
}

// tbb::task_group in a task_arena of `threads` threads (the caller's included).
counts traverse_tbb(const tree& t, int threads);

// OpenMP tasks in a parallel region of `threads` threads; false from has_openmp() when the
// library was built without OpenMP (traverse_openmp then returns empty counts).
bool has_openmp();
counts traverse_openmp(const tree& t, int threads);

// Rill tasks on the calling rank's workers; call from a Rill task (inside runtime::run).
// traverse_rill waits with rill::finish; traverse_rill_latch with spawn, a pending count of tasks
// and a rill::latch (what finish costs is the difference). Both spawn with rill::may_inline, but
// traverse_rill(t, true) queues every task.
counts traverse_rill(const tree& t, bool queued = false);
counts traverse_rill_latch(const tree& t);

// Rill across ranks: every child is an async_any task, which idle ranks steal (the root's rank
// holds all the work at first). Every process calls prepare_distributed with its copy of the tree
// (built from the same flags) before its runtime runs; traverse_rill_distributed then runs on one
// rank, inside runtime::run, and returns the statistics summed over every rank.
void prepare_distributed(const tree& t, int ranks);
counts traverse_rill_distributed();

}  // namespace uts
