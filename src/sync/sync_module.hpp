// The sync layer's part of a rank: the tables of its barriers, reservations, finish scopes, pinned
// promises, LCOs, teams and dist_objects. It also tells the scheduler what a task's scope (a finish) does with
// credit and errors (task_scope_hooks).
#pragma once

#include "events/events_module.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"
#include "scheduler/worker_pool.hpp"
#include "sync/barrier.hpp"
#include "sync/dist_object_table.hpp"
#include "sync/finish_table.hpp"
#include "sync/lco_table.hpp"
#include "sync/promise_pins.hpp"
#include "sync/reservation_table.hpp"
#include "sync/team_table.hpp"

namespace rill::detail {

class sync_module final : public rank_module {
 public:
  sync_module(int rank, int ranks, worker_pool& pool, events_module& events);

  int id() const { return id_; }
  int size() const { return size_; }
  event_table& events() { return events_; }
  barrier_table& barriers() { return barriers_; }
  reservation_table& reservations() { return reservations_; }
  finish_table& finishes() { return finishes_; }
  promise_pins& promises() { return promises_; }
  lco_table& lcos() { return lcos_; }
  team_table& teams() { return teams_; }
  dist_object_table& dist_objects() { return dist_objects_; }
  void report_counters(counter_report& out) override;

 private:
  const int id_;
  const int size_;
  event_table& events_;
  // The barriers this rank owns; their phases are slots of the event table.
  barrier_table barriers_{id_, events_};
  // Reservations this rank has seen; their pending callbacks wait in the event table.
  reservation_table reservations_{id_, size_};
  finish_table finishes_{id_};
  promise_pins promises_;
  lco_table lcos_{id_};
  team_table teams_{id_, size_};  // teams and the mailboxes of collectives (team_table.*)
  dist_object_table dist_objects_{id_};
};

// The calling worker's rank's sync module; throws rill::misuse_error naming `what` elsewhere.
inline sync_module& sync_here(const char* what) { return current_module<sync_module>(what); }

}  // namespace rill::detail
