#include "uts/traverse.hpp"

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#if RILL_UTS_OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

#include "rill/async_any.hpp"
#include "rill/finish.hpp"
#include "rill/future.hpp"
#include "rill/rill.hpp"

namespace uts {

namespace {

std::atomic<std::uint64_t> next_traversal_id{1};

// The block this thread last used, and the traversal it belongs to.
struct cached_block {
  std::uint64_t id = 0;
  counts* block = nullptr;
};
thread_local cached_block cache;

// Spawners for walk(): how each runtime starts a child's task.

struct tbb_walk {
  const tree* t;
  thread_counts* stats;
  tbb::task_group* group;
};

void tbb_task(tbb_walk* w, const node& n) {
  struct spawner {
    tbb_walk* w;
    void expect(int) {}
    void operator()(const node& c) const {
      w->group->run([w = w, c] { tbb_task(w, c); });
    }
  };
  walk(*w->t, n, w->stats->local(), spawner{w});
}

#if RILL_UTS_OPENMP
void omp_task(const tree* t, thread_counts* stats, const node& n) {
  struct spawner {
    const tree* t;
    thread_counts* stats;
    void expect(int) {}
    void operator()(const node& c) const {
      const tree* tp = t;
      thread_counts* sp = stats;
      node cc = c;
#pragma omp task firstprivate(tp, sp, cc)
      omp_task(tp, sp, cc);
    }
  };
  walk(*t, n, stats->local(), spawner{t, stats});
}
#endif

// Rill without finish: every task counts itself out of a shared pending count (one atomic
// decrement per task, one increment per node with several children); the last one opens the latch.
struct rill_latch_walk {
  const tree* t;
  thread_counts* stats;
  std::atomic<long> pending{1};
  rill::latch done{1};
};

void rill_latch_task(rill_latch_walk* w, const node& n) {
  struct spawner {
    rill_latch_walk* w;
    void expect(int k) { w->pending.fetch_add(k, std::memory_order_relaxed); }
    void operator()(const node& c) const {
      rill::spawn(rill::may_inline, [w = w, c] { rill_latch_task(w, c); });
    }
  };
  walk(*w->t, n, w->stats->local(), spawner{w});
  if (w->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) w->done.count_down();
}

// Rill with finish/async: the finish scope knows when every task has ended. A node's task never
// waits, so children are spawned with rill::may_inline, which runs them at once while the worker
// has plenty queued (OpenMP's tasks have that license by default); `queued` spawns every child as
// a queued task instead.
struct rill_finish_walk {
  const tree* t;
  thread_counts* stats;
  bool queued;
};

void rill_finish_task(rill_finish_walk* w, const node& n) {
  struct spawner {
    rill_finish_walk* w;
    void expect(int) {}
    void operator()(const node& c) const {
      if (w->queued)
        rill::async([w = w, c] { rill_finish_task(w, c); });
      else
        rill::async(rill::may_inline, [w = w, c] { rill_finish_task(w, c); });
    }
  };
  walk(*w->t, n, w->stats->local(), spawner{w});
}

// Across ranks a task carries only its node: the tree and the statistics are found per process
// (in the local transport's one process, statistics[r] is rank r's).
struct distributed_walk {
  const tree* t = nullptr;
  std::vector<std::unique_ptr<thread_counts>> statistics;
};
distributed_walk distributed;

void rill_distributed_task(node n) {
  struct spawner {
    void expect(int) {}
    void operator()(const node& c) const { rill::async_any(rill_distributed_task, c); }
  };
  walk(*distributed.t, n, distributed.statistics[static_cast<std::size_t>(rill::rank_me())]->local(), spawner{});
}

}  // namespace

thread_counts::thread_counts() : id_(next_traversal_id.fetch_add(1, std::memory_order_relaxed)) {}

counts& thread_counts::local() {
  if (cache.id != id_) {
    std::lock_guard<std::mutex> lock(mutex_);
    cache.block = &blocks_.emplace_back().c;
    cache.id = id_;
  }
  return *cache.block;
}

counts thread_counts::total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  counts sum;
  for (const block& b : blocks_) {
    sum.nodes += b.c.nodes;
    sum.leaves += b.c.leaves;
    sum.depth = std::max(sum.depth, b.c.depth);
  }
  return sum;
}

counts traverse_tbb(const tree& t, int threads) {
  thread_counts stats;
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::task_group group;
    tbb_walk w{&t, &stats, &group};
    const node root = t.root();
    group.run([&w, root] { tbb_task(&w, root); });
    group.wait();
  });
  return stats.total();
}

bool has_openmp() { return RILL_UTS_OPENMP != 0; }

counts traverse_openmp([[maybe_unused]] const tree& t, [[maybe_unused]] int threads) {
  thread_counts stats;
#if RILL_UTS_OPENMP
  const node root = t.root();
  // Every task has finished at the implicit barrier that ends `single`. (A taskgroup here made
  // libgomp 12 segfault in GOMP_taskgroup_end about one run in twenty.)
#pragma omp parallel num_threads(threads)
#pragma omp single
  omp_task(&t, &stats, root);
#endif
  return stats.total();
}

counts traverse_rill_latch(const tree& t) {
  thread_counts stats;
  rill_latch_walk w{&t, &stats};
  rill_latch_task(&w, t.root());
  w.done.wait();
  return stats.total();
}

counts traverse_rill(const tree& t, bool queued) {
  thread_counts stats;
  rill_finish_walk w{&t, &stats, queued};
  rill::finish([&] { rill_finish_task(&w, t.root()); });
  return stats.total();
}

void prepare_distributed(const tree& t, int ranks) {
  distributed.t = &t;
  distributed.statistics.clear();
  for (int r = 0; r < ranks; ++r) distributed.statistics.push_back(std::make_unique<thread_counts>());
}

counts traverse_rill_distributed() {
  const int ranks = rill::rank_n();
  if (!distributed.t || distributed.statistics.size() != static_cast<std::size_t>(ranks))
    throw std::logic_error("uts: prepare_distributed was not called for this many ranks");
  // Fresh statistics on every rank (each rank replaces only its own slot).
  std::vector<rill::future<int>> reset;
  for (int r = 0; r < ranks; ++r)
    reset.push_back(rill::rpc(r, [] {
      distributed.statistics[static_cast<std::size_t>(rill::rank_me())] = std::make_unique<thread_counts>();
      return 0;
    }));
  for (auto& f : reset) f.wait();
  const node root = distributed.t->root();
  rill::finish([&] { rill::async_any(rill_distributed_task, root); });
  std::vector<rill::future<counts>> parts;
  for (int r = 0; r < ranks; ++r)
    parts.push_back(
        rill::rpc(r, [] { return distributed.statistics[static_cast<std::size_t>(rill::rank_me())]->total(); }));
  counts sum;
  for (auto& f : parts) {
    const counts c = f.get();
    sum.nodes += c.nodes;
    sum.leaves += c.leaves;
    sum.depth = std::max(sum.depth, c.depth);
  }
  return sum;
}

}  // namespace uts
