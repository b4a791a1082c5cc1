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
    : id_(rank), size_(ranks), events_(events.table()) {
  pool.set_scope_hooks(task_scope_hooks{&release_finish_credit, &finish_task_failed});
}

}  // namespace rill::detail
