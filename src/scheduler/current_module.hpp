// How a layer finds its per-rank state: through the worker running the calling thread.
#pragma once

#include "scheduler/rank_modules.hpp"
#include "scheduler/worker_pool.hpp"

namespace rill::detail {

// Throws rill::misuse_error: `what` was called outside a Rill task or handler.
[[noreturn]] void throw_outside_worker(const char* what);

// The calling worker's rank's module M; throws rill::misuse_error naming `what` when the thread is
// not a Rill worker.
template <class M>
M& current_module(const char* what) {
  worker* w = current_worker();
  if (!w) [[unlikely]]
    throw_outside_worker(what);
  return w->pool().services().modules().get<M>();
}

}  // namespace rill::detail
