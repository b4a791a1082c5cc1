// One rank's part of distributed work stealing (rill/async_any.hpp): the request/reply protocol
// with other ranks.
//
// async_any tasks sit in the workers' deques with every other task; their records can ship
// themselves (task_record::invoke with a rank). A request takes records from the tops of the
// rank's deques, the oldest end: those that can ship go to the thief (a counted message, like
// async_at), others move to the deque of the worker handling the request. So every task runs
// exactly once, here or on the thief. Requests and "nothing to give" replies are control
// messages: idle ranks asking each other do not keep termination detection waiting.
//
// Idle ranks ask only while they are *armed*: a rank that queues an async_any task while it has
// not announced any tells every other rank so (one control message each), and a thief disarms
// after a run of empty replies. So a program that never uses async_any has no steal traffic.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>
#include <vector>

#include "core/rank_core.hpp"
#include "rill/async_any.hpp"
#include "rill/config.hpp"
#include "rill/machine.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class remote_steal final : public rank_module {
 public:
  remote_steal(rank_core& rank, const rill::machine& machine, const rill::config& cfg);
  ~remote_steal() override;

  // An async_any task was queued here.
  void queued() {
    if (!announced_.load(std::memory_order_relaxed)) announce();
  }
  // A worker of this rank ran out of tasks: once none holds any, the next async_any announces anew.
  void on_out_of_work(worker&) override;
  // An idle worker of this rank: maybe ask a victim for work.
  void on_idle(worker&) override;
  // Control message handlers.
  void on_work_announced();
  void on_request(int thief);
  void on_reply(int victim, std::uint32_t given);

  rill::steal_counts counts();
  void report_counters(counter_report& out) override;

 private:
  int pick_victim();
  void announce();

  rank_core& rank_;
  const rill::machine& machine_;
  const steal_policy policy_;
  const std::uint32_t batch_;
  std::atomic<bool> asking_{false};     // a request of ours is out
  std::atomic<bool> armed_{false};      // some rank announced tasks to steal
  std::atomic<bool> announced_{false};  // others know we hold async_any tasks
  std::atomic<std::uint64_t> next_try_ns_{0};
  // Thief state, touched only by the worker that won asking_.
  std::uint64_t backoff_ns_;
  // Empty replies since the last steal that got tasks or the last announcement: picks near or far
  // victims (hierarchical) and disarms the thief.
  std::atomic<std::uint32_t> failures_{0};
  std::mt19937_64 rng_;
  std::vector<int> near_, far_;  // other ranks on this node / on other nodes
  std::atomic<std::uint64_t> requests_sent_{0}, requests_empty_{0}, tasks_stolen_{0}, tasks_given_{0};
};

}  // namespace rill::detail
