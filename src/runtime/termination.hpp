// Termination detection: when is the whole program quiescent, so that every rank may stop?
//
// Rank 0 runs waves (Mattern's four-counter method). Each wave asks every rank for its counts of
// active messages sent and handled; a rank answers only when it is locally quiet (no task running
// or queued, no ready fiber, buffers flushed). The program has terminated when two consecutive
// waves report the same totals and sent == handled. Control messages are not counted.
//
// A wave travels down a tree of the ranks (common/rank_tree.hpp, --rill:tree-fanout children per
// rank) and its answers back up it: a rank passes the probe to its children at once, and answers
// its parent with the sums of its subtree once it is quiet itself and every child has answered.
// So a rank handles at most fanout + 1 messages a wave, where rank 0 used to handle one from every
// rank. The order in which a wave samples the ranks does not matter to the method; that the next
// wave starts only once this one has gathered every rank's counts does, and holds.
//
// run():      the top-level task's end starts the waves on rank 0.
// run_spmd(): each rank's task reports its end to rank 0; the last report starts the waves.
//
// Waves that find sent != handled for good mean a message that never arrives, or a handler that
// never ends; waves that never complete mean a rank that does not answer. Either way rank 0
// starts a delivery audit (core/delivery_audit.hpp), which tells a loss and a silent rank
// apart and reports both.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/rank_tree.hpp"
#include "core/delivery_audit.hpp"
#include "core/rank_core.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class termination final : public rank_module {
 public:
  termination(rank_core& rank, delivery_audit& audit, int fanout)
      : rank_module("runtime", idle_hook), rank_(rank), audit_(audit), tree_{rank.size(), fanout} {}

  // Rank 0: the top-level task returned `code` (run), or rank `from` finished its spmd task.
  void top_level_done(int code);
  void spmd_done(int from, int code);
  // Any rank, from an idle worker: answers a probe once quiet. Rank 0: audits message delivery
  // when the waves have seen no change for an audit period (a lost message, a silent rank).
  void on_idle(worker&) override;
  // waves: the waves rank 0 ran; wave_messages: the probes and answers this rank received.
  void report_counters(counter_report& out) override;

  // Message handlers (run on the receiving rank): the wave's probe from the parent, a child's
  // answer for its subtree.
  void on_probe(std::uint64_t wave);
  void on_reply(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled);

 private:
  void audit_if_stuck();
  // Rank 0: starts the next wave down the tree.
  void start_wave();
  // Adds one answer (this rank's own or a child's) to the subtree's sums for `wave`; the last one
  // goes up to the parent, or at rank 0 ends the wave.
  void add_answer(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled);
  // Rank 0: every rank's counts for the wave are in.
  void wave_answered(std::uint64_t sent, std::uint64_t handled);

  rank_core& rank_;
  delivery_audit& audit_;
  const rank_tree tree_;
  // Rank 0: when waves started or last saw the totals move (0: no waves yet).
  std::atomic<std::uint64_t> moved_ns_{0};
  std::atomic<std::uint64_t> probe_wave_{0};  // a wave to answer once quiet; 0 = none
  std::atomic<std::uint64_t> wave_messages_{0};
  // Every rank, under subtree_lock_: the answers to the current wave still to come (its
  // children's and its own), and the sums so far.
  std::mutex subtree_lock_;
  int answers_due_ = 0;
  std::uint64_t subtree_sent_ = 0, subtree_handled_ = 0;
  // Rank 0 only, under lock_.
  std::mutex lock_;
  int spmd_reports_ = 0;
  int exit_code_ = 0;
  int exit_code_rank_ = -1;
  std::uint64_t wave_ = 0;
  std::uint64_t prev_sent_ = ~0ull, prev_handled_ = ~0ull;
};

}  // namespace rill::detail
