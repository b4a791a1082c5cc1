#include "sync/sync_module.hpp"

#include "rill/detail/finish_hooks.hpp"

namespace rill::detail {

namespace {
// A task's scope, for the scheduler, is the finish_proxy of the finish it runs in.
void release_finish_credit(void* scope, std::int64_t units) {
  finish_release(static_cast<finish_proxy*>(scope), units);
}
void finish_task_failed(void* scope, std::exception_ptr error) {
  finish_task_ended(static_cast<finish_proxy*>(scope), std::move(error));
}
}  // namespace

sync_module::sync_module(int rank, int ranks, worker_pool& pool, events_module& events)
    : rank_module("sync"), id_(rank), size_(ranks), events_(events.table()) {
  pool.set_scope_hooks(task_scope_hooks{&release_finish_credit, &finish_task_failed});
  // A collective's task waits in its mailbox, not on an event: the hang report asks the teams.
  events_.trace().add_hang_note([this] { return teams_.waiting_report(); });
}

void sync_module::report_counters(counter_report& out) {
  const rill::reservation_counts c = reservations_.counts();
  out.add("reservations_created", c.created);
  out.add("reservations_known", c.known);
  out.add("reservation_grants", c.grants);
  out.add("reservation_requests_sent", c.requests_sent);
  out.add("reservation_requests_forwarded", c.requests_forwarded);
  out.add("reservation_transfers_sent", c.transfers_sent);
  out.add("reservation_transfers_received", c.transfers_received);
  out.add("dist_objects_constructed", dist_objects_.constructed());
  out.add("dist_objects_live", dist_objects_.live());
}

}  // namespace rill::detail
