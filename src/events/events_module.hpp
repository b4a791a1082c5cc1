// The events layer's part of a rank: its event table (with the trace of its event graph), and the
// hang watch that idle workers run.
#pragma once

#include "common/options.hpp"
#include "core/delivery_audit.hpp"
#include "events/event_table.hpp"
#include "events/unobserved_errors.hpp"
#include "rill/config.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class events_module final : public rank_module {
 public:
  events_module(int rank, int ranks, const rill::config& cfg, delivery_audit& audit)
      : rank_module("events", idle_hook),
        rank_(rank),
        audit_(audit),
        unobserved_(cfg.unobserved_errors),
        table_(rank, ranks, threads_per_rank(cfg)) {
    table_.trace().configure(cfg);
  }
  event_table& table() { return table_; }
  void on_idle(worker&) override {
    // A message lost on the way would leave the waiters hanging: find out.
    if (table_.trace().hang_watch_on() && table_.check_hang()) audit_.start("a hang report");
  }
  int end_of_run(int exit_code) override {
    exit_code = report_unknown_triggers(table_, rank_, exit_code);
    return report_unobserved_errors(table_, rank_, unobserved_, exit_code);
  }
  void report_counters(counter_report& out) override {
    const rill::event_counts c = table_.counts();
    out.add("slots", c.slots);
    out.add("created", c.created);
    out.add("untriggered", c.untriggered);
    out.add("peak_untriggered", c.peak_untriggered);
    out.add("retired_slots", c.retired_slots);
    out.add("remote_slots", c.remote_slots);
    out.add("subscriptions_sent", c.subscriptions_sent);
    out.add("notifications_sent", c.notifications_sent);
    out.add("triggers_sent", c.triggers_sent);
  }

 private:
  const int rank_;
  delivery_audit& audit_;
  const rill::unobserved_policy unobserved_;
  event_table table_;
};

// The calling worker's rank's event table; throws rill::misuse_error naming `what` elsewhere.
inline event_table& events_here(const char* what) { return current_module<events_module>(what).table(); }

}  // namespace rill::detail
