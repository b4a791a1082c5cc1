// Termination detection: when is the whole program quiescent, so that every rank may stop?
//
// Rank 0 runs waves (Mattern's four-counter method). Each wave asks every rank for its counts of
// active messages sent and handled; a rank answers only when it is locally quiet (no task running
// or queued, no ready fiber, buffers flushed). The program has terminated when two consecutive
// waves report the same totals and sent == handled. Control messages are not counted.
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

#include "core/delivery_audit.hpp"
#include "core/rank_core.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class termination final : public rank_module {
 public:
  termination(rank_core& rank, delivery_audit& audit) : rank_module("runtime", idle_hook), rank_(rank), audit_(audit) {}

  // Rank 0: the top-level task returned `code` (run), or rank `from` finished its spmd task.
  void top_level_done(int code);
  void spmd_done(int from, int code);
  // Any rank, from an idle worker: answers a probe once quiet. Rank 0: audits message delivery
  // when the waves have seen no change for an audit period (a lost message, a silent rank).
  void on_idle(worker&) override;

  // Message handlers (run on the receiving rank).
  void on_probe(std::uint64_t wave);
  void on_reply(std::uint64_t wave, std::uint64_t sent, std::uint64_t handled);

 private:
  void audit_if_stuck();

  rank_core& rank_;
  delivery_audit& audit_;
  // Rank 0: when waves started or last saw the totals move (0: no waves yet).
  std::atomic<std::uint64_t> moved_ns_{0};
  std::atomic<std::uint64_t> probe_wave_{0};  // a wave to answer once quiet; 0 = none
  // Rank 0 only, under lock_.
  std::mutex lock_;
  int spmd_reports_ = 0;
  int exit_code_ = 0;
  int exit_code_rank_ = -1;
  std::uint64_t wave_ = 0;
  int replies_ = 0;
  std::uint64_t sent_ = 0, handled_ = 0;
  std::uint64_t prev_sent_ = ~0ull, prev_handled_ = ~0ull;
};

}  // namespace rill::detail
