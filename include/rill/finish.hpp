// Structured task parallelism, Habanero style: async, async_at and finish.
//
//   rill::finish([] {
//     rill::async([] { work(); });                      // a child task on this rank
//     rill::async_at(2, [](int n) { more(n); }, 42);    // a task shipped to rank 2
//   });                                                 // returns once both, and everything they
//                                                       // started, transitively, have ended
//
// Every task started inside finish -- with async, async_at, spawn, spawn_on, and the constructs
// built on them -- belongs to the innermost finish scope of the task that started it, on any rank.
// finish() returns when every task of its scope has ended; tasks shipped to other ranks and their
// descendants count too. The wait suspends the calling task's fiber, never the worker thread.
// If tasks threw, finish() rethrows the first exception it learned of once all have ended: a
// local task's own exception, or rill::task_error for a task that threw on another rank.
//
// The detection is exact under any message timing (Dijkstra-Scholten per scope; docs/finish.md):
// finish cannot return while a task of its scope runs, is queued, or travels in a message.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/am.hpp"
#include "rill/detail/finish_hooks.hpp"
#include "rill/error.hpp"
#include "rill/proc.hpp"
#include "rill/task.hpp"

namespace rill {

namespace detail {
// Runs body(arg) as the body of a new finish scope, waits for the scope, rethrows its first error.
void finish_run(void (*body)(void*), void* arg);

// Sends fn(args...) to another rank as a task of the ticket's scope (a shippable fn).
template <class Fn, class... Args>
void ship_task(int rank, const finish_ticket& ticket, Fn fn, Args&&... args) {
  using S = shipped_callable<Fn>;
  am::send(
      rank,
      [](finish_ticket t, S s, std::decay_t<Args>... a) {
        finish_proxy* p = finish_adopt(t);
        task_submit(make_scoped_task(
            p, [f = s.unpack(), tup = std::make_tuple(std::move(a)...)]() mutable { std::apply(f, std::move(tup)); }));
      },
      ticket, S::pack(fn), std::forward<Args>(args)...);
}
}  // namespace detail

// Runs body(), then waits until every task started in it, transitively and on any rank, has ended.
template <class F>
void finish(F&& body) {
  auto run = [](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); };
  detail::finish_run(run, static_cast<void*>(&body));
}

// Runs fn() as a task on this rank, in the calling task's finish scope (Habanero's async; the same
// as rill::spawn). Idle workers of the rank may steal it.
template <class F>
void async(F&& fn) {
  spawn(std::forward<F>(fn));
}

// async(fn) with the promise that fn never waits for what the caller does after this call: it may
// run at once, on the caller's fiber (rill::may_inline_t, rill/task.hpp).
template <class F>
void async(may_inline_t, F&& fn) {
  spawn(may_inline, std::forward<F>(fn));
}

// Runs fn(args...) as a task on rank `rank`, in the calling task's finish scope. On another rank,
// fn must be a function, a capture-less lambda or a lambda with trivially copyable captures, and
// args anything rill::am::send carries; on the calling rank anything goes. Never blocks.
template <class F, class... Args>
void async_at(int rank, F&& fn, Args&&... args) {
  using Fn = std::decay_t<F>;
  static_assert(std::is_invocable_v<Fn&, std::decay_t<Args>&&...>,
                "rill::async_at: the callable cannot be called with these arguments");
  detail::require_worker("rill::async_at");
  if (rank < 0 || rank >= rank_n()) throw misuse_error("rill::async_at: no such rank");
  if (rank == rank_me()) {
    spawn([f = std::forward<F>(fn), tup = std::make_tuple(std::forward<Args>(args)...)]() mutable {
      std::apply(f, std::move(tup));
    });
    return;
  }
  if constexpr (!detail::shippable<Fn>) {
    throw misuse_error(
        "rill::async_at: a callable with captures that are not trivially copyable can run only on the calling "
        "rank; pass the data as arguments");
  } else {
    detail::ship_task(rank, detail::finish_ship(), fn, std::forward<Args>(args)...);
  }
}

// Grappa's names: spawn_on ships a task to a rank (spawn, rill/task.hpp, starts one here).
template <class F, class... Args>
void spawn_on(int rank, F&& fn, Args&&... args) {
  async_at(rank, std::forward<F>(fn), std::forward<Args>(args)...);
}

namespace detail {
// Waits for a barrier of the world team (rill/team.hpp).
void world_barrier_wait();
}  // namespace detail

// For programs under runtime::run_spmd: every rank calls it; it returns on every rank once every
// rank's body and all the tasks they started (transitively, on any rank) have ended. Each rank's
// finish covers what its body started; a world barrier then waits for every rank's finish. If the
// body or its tasks threw, the first exception is rethrown on that rank after the barrier.
template <class F>
void finish_spmd(F&& body) {
  std::exception_ptr error;
  try {
    finish(std::forward<F>(body));
  } catch (...) {
    error = std::current_exception();
  }
  detail::world_barrier_wait();
  if (error) std::rethrow_exception(error);
}

}  // namespace rill
