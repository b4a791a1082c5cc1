// How a layer finds its per-rank state: through the worker running the calling thread.
#pragma once

#include "scheduler/rank_modules.hpp"
#include "scheduler/worker_pool.hpp"

namespace rill::detail {

// Throws rill::misuse_error: `what` was called outside a Rill task or handler.
[[noreturn]] void throw_outside_worker(const char* what);

// The module M of the rank whose worker runs this thread, once the thread has asked for it. A
// worker never changes rank and each pool's workers are threads of their own, so the first lookup
// through the worker's pool and module table holds for the thread's life: every later one is a
// single thread-local load.
template <class M>
inline constinit thread_local M* tls_module = nullptr;

// The calling worker's rank's module M; throws rill::misuse_error naming `what` when the thread is
// not a Rill worker.
template <class M>
M& current_module(const char* what) {
  if (M* m = tls_module<M>) [[likely]]
    return *m;
  worker* w = current_worker();
  if (!w) [[unlikely]]
    throw_outside_worker(what);
  M& m = w->pool().services().modules().get<M>();
  tls_module<M> = &m;
  return m;
}

}  // namespace rill::detail
