// Seeing what events do: the event graph of a run (Graphviz DOT, --rill:event-graph) and the state
// behind the hang report (--rill:hang-report-s). One per rank, a member of its event_table; nothing
// here is process-global. See docs/debugging.md.
//
// Costs when off: the graph hooks are a branch on graph_on(); the creating operation of each owned
// slot is three relaxed stores; the watchdog reads counters the table keeps anyway, plus one counter
// bumped only on protocol messages. Waiters carry no field for any of this: what a waiter is comes
// from its fn (waiter_kind_of), so merges of many inputs take no more memory (R2 unchanged).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "rill/config.hpp"
#include "rill/event.hpp"

namespace rill::detail {

// The operation that created an event; kept for every owned slot (graph on or off).
enum class op_kind : std::uint8_t { event, user_event, merge, spawn, promise };

const char* op_name(op_kind k);
// What made an event owned by rank `me`, in words: "completion of a task spawned from rank 0 to
// rank 1", "user_event created on rank 0".
std::string describe_op(op_kind k, int arg, int me);
// What a waiter is, and the event it leads to (a task's completion, a merge's result, the event a
// deferred trigger triggers; none() for fibers and others). Told by the waiter's fn, so that
// waiters need no field for it (event_api.cpp, which defines those fns).
waiter_kind waiter_kind_of(const event_waiter& w);
event waiter_target(const event_waiter& w);
// For a fiber's waiter: whether the waiting task runs inline (rill::may_inline) above its spawner.
bool waiter_runs_inline(const event_waiter& w);
// "(rank 1, slot 3, gen 2)": how reports and errors name an event.
std::string event_name(event e);

class event_trace {
 public:
  explicit event_trace(int me) : me_(me) {}
  event_trace(const event_trace&) = delete;
  event_trace& operator=(const event_trace&) = delete;

  // Before the rank's workers start.
  void configure(const rill::config& cfg);
  int rank() const { return me_; }

  bool graph_on() const { return graph_; }
  bool hang_watch_on() const { return hang_ns_ != 0; }
  double hang_seconds() const { return static_cast<double>(hang_ns_) / 1e9; }

  // ---- the graph (call only when graph_on()) ----
  // `e` was created here by `op` (`arg`: the target rank of a spawn).
  void record_create(event e, op_kind op, int arg);
  // `w` (kind and target set) waits for `e` on this rank.
  void record_wait(event e, const event_waiter& w);
  // `result` merges `inputs` (also those already triggered, which register no waiter).
  void record_merge(std::span<const event> inputs, event result);
  // `e`, owned here, triggered (poisoned when cause is set) by rank `by`.
  void record_trigger(event e, int by, const poison_ptr& cause);

  // One Graphviz digraph of what `ranks` recorded: a node per operation (named by the event it
  // completes), an edge per dependence, colours by rank, poisoned events red.
  static void write_dot(std::ostream& out, std::span<const event_trace* const> ranks);

  // ---- the watchdog ----
  // Protocol activity the event table's own counters do not show (notifies, remote triggers,
  // subscriptions). Bumped on message paths only.
  // A load and a store, not an atomic add: the hang watch only asks whether the count moved, and
  // two workers that race here still move it. (An add is a locked instruction on every
  // protocol message.)
  void note_progress() { progress_.store(progress_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  std::uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }
  std::mutex& hang_mutex() { return hang_m_; }
  // Under hang_mutex(): `sig` summarises the rank's event activity. True when it has not changed
  // for the hang time and this quiet period has not been reported yet.
  bool hang_due(const std::array<std::uint64_t, 3>& sig, std::uint64_t now_ns);
  void hang_reported() { reported_ = true; }
  // What a layer above adds to the hang report: waits that are not on events (a collective's task
  // in its mailbox). Each note returns lines ("" when it has nothing); add them before the workers
  // start.
  void add_hang_note(std::function<std::string()> note) { hang_notes_.push_back(std::move(note)); }
  std::string hang_notes() const {
    std::string out;
    for (const auto& note : hang_notes_) out += note();
    return out;
  }
  std::uint64_t quiet_ns(std::uint64_t now_ns) const { return now_ns - quiet_since_ns_; }

 private:
  std::vector<std::function<std::string()>> hang_notes_;
  struct node_rec {
    event e;
    op_kind op;
    int arg;
  };
  struct edge_rec {
    event from;
    event to;  // none() for a fiber's wait (then `wait` numbers it)
    waiter_kind kind;
    std::uint64_t wait;
  };
  struct trigger_rec {
    event e;
    int by;
    poison_ptr cause;
  };

  const int me_;
  bool graph_ = false;
  std::uint64_t hang_ns_ = 0;

  mutable std::mutex m_;  // guards the records
  std::vector<node_rec> nodes_;
  std::vector<edge_rec> edges_;
  std::vector<trigger_rec> triggers_;
  std::uint64_t waits_ = 0;

  alignas(64) std::atomic<std::uint64_t> progress_{0};
  std::mutex hang_m_;  // guards what follows
  std::array<std::uint64_t, 3> last_sig_{};
  std::uint64_t quiet_since_ns_ = 0;
  bool reported_ = false;
};

// Where rank `rank`'s part of the graph goes: PATH without ".dot", then ".rank<rank>.dot".
std::string event_graph_rank_path(const std::string& path, int rank);
// At the end of a run: each local rank's part to its own file, and when this process holds all
// `ranks` ranks (the local transport), the whole graph to `path` as well.
void write_event_graph_files(const std::string& path, std::span<const event_trace* const> local, int ranks);

}  // namespace rill::detail
