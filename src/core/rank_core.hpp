// The rank core: what every rank has whatever layers run on it. Its endpoint, its messenger
// (aggregation, back-pressure, dispatch), its workers, and the table of its modules, the per-rank
// parts of the layers above (events, sync, global, ...; scheduler/rank_modules.hpp). It serves the
// scheduler (rank_services) and calls each module's hooks at the points of the worker loop the
// module asked for. It knows no layer above it.
#pragma once

#include <vector>

#include "messages/messenger.hpp"
#include "rill/config.hpp"
#include "rill/rank.hpp"
#include "scheduler/rank_services.hpp"
#include "scheduler/worker_pool.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class rank_core final : public rank_services {
 public:
  rank_core(endpoint& ep, const rill::config& cfg);
  ~rank_core() override;

  int id() const { return id_; }
  int size() const { return size_; }
  messenger& msgr() { return msgr_; }
  worker_pool& pool() { return pool_; }

  // Call once every module is added, before the workers start: collects the modules' hooks.
  void modules_ready();

  // rank_services
  bool progress(worker& w) override { return msgr_.progress(w); }
  void on_out_of_work(worker& w) override;
  void on_idle(worker& w) override;
  bool must_poll() const override { return msgr_.must_poll(); }
  bool has_input(const worker& w) const override { return msgr_.has_input_for(w); }

  // Stops the rank's workers; the rank's run returns `exit_code`.
  void stop(int exit_code);
  int exit_code() const { return exit_code_; }
  // After its workers stopped: each module's end-of-run checks, in order of addition, which may
  // change the run's exit code (`exit_code` is the code so far, for all the process's ranks).
  int end_of_run(int exit_code);
  // The rank's counters, summed over its workers.
  rill::rank_stats stats();
  // Every counter of the rank: the core's (scheduler, messages), then each module's in order.
  std::vector<rill::counter> counters();

 private:
  const int id_;
  const int size_;
  messenger msgr_;
  worker_pool pool_;
  std::vector<rank_module*> out_of_work_hooks_;  // in order of addition
  std::vector<rank_module*> idle_hooks_;         // the layer added last first
  int exit_code_ = 0;
};

// The calling worker's rank core; throws rill::misuse_error naming `what` elsewhere.
rank_core& current_core(const char* what);

}  // namespace rill::detail
