// How a transfer (a copy, a fill, a reduction, a replay) begins: on a data-movement channel of one
// rank -- an I/O thread when it touches an external resource -- once its precondition has
// triggered (scheduler/channel.hpp), with an event that its own code triggers when the transfer
// is complete, on whichever rank that is. There, one that touches a resource finds where it reads
// or writes, and queues that I/O at its place in the rank's I/O queue (io_queue.hpp).
#pragma once
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "data/io_queue.hpp"
#include "rill/am.hpp"
#include "rill/event.hpp"
#include "rill/proc.hpp"
#include "rill/task.hpp"
#include "scheduler/channel.hpp"

namespace rill::detail {

// Runs fn() on a channel of the calling rank.
template <class F>
void on_channel(F&& fn) {
  channel_submit(make_task(std::forward<F>(fn)));
}
// Queues t for an I/O thread of the calling rank, in its I/O queue (io_queue.hpp): at `where`,
// or (queue_io_anywhere) on no device.
void queue_io(const io_place& where, task_record* t, std::shared_ptr<io_run> run = {});
void queue_io_anywhere(task_record* t);
// Runs fn() on an I/O thread of the calling rank, taken in the I/O queue's order for `where`.
template <class F>
void on_io(const io_place& where, F&& fn) {
  queue_io(where, make_task(std::forward<F>(fn)));
}
// The same at run's place, once the queue has done the I/O it describes (fn completes the
// transfer: run->failure says whether it failed).
template <class F>
void on_io(std::shared_ptr<io_run> run, F&& fn) {
  const io_place where = run->where;
  queue_io(where, make_task(std::forward<F>(fn)), std::move(run));
}

// On the calling rank: once `pre` has triggered, fn(args..., done) on a thread Submit queues for
// (a channel, an I/O thread). A poisoned `pre` poisons `done` with the same cause, and so does
// what fn throws.
template <void (*Submit)(task_record*), class F, class... Args>
void on_thread_when(event pre, event done, F fn, std::tuple<Args...> args) {
  submit_when<Submit>(pre, done, [done, fn, a = std::move(args)]() mutable {
    auto body = [&] { std::apply([&](Args&... v) { fn(v..., done); }, a); };
    run_guarded(done, body);
  });
}
template <class F, class... Args>
void on_channel_when(event pre, event done, F fn, std::tuple<Args...> args) {
  on_thread_when<&channel_submit>(pre, done, std::move(fn), std::move(args));
}

// Runs fn(args..., done) on a thread Submit queues for, of `rank`, once `after` has triggered and
// returns `done`, a new event that fn's transfer triggers or poisons. fn is a lambda without
// captures (it is made again on `rank`).
template <void (*Submit)(task_record*), class F, class... Args>
event started_on(int rank, event after, F, Args&&... args) {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>, "started_at: a lambda without captures");
  const event done = user_event::create();
  if (rank == rank_me()) {
    on_thread_when<Submit>(after, done, F{}, std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...));
    return done;
  }
  am::send(
      rank,
      [](event pre, event d, std::decay_t<Args>... a) {
        on_thread_when<Submit>(pre, d, F{}, std::tuple<std::decay_t<Args>...>(std::move(a)...));
      },
      after, done, std::forward<Args>(args)...);
  return done;
}
// On a channel of `rank`.
template <class F, class... Args>
event started_at(int rank, event after, F fn, Args&&... args) {
  return started_on<&channel_submit>(rank, after, fn, std::forward<Args>(args)...);
}
// On an I/O thread of `rank`: work on an external resource that is no device's reads or writes
// (opening it, checking its version, closing it, finding where a transfer's I/O lies), taken
// before them.
template <class F, class... Args>
event io_started_at(int rank, event after, F fn, Args&&... args) {
  return started_on<&queue_io_anywhere>(rank, after, fn, std::forward<Args>(args)...);
}

}  // namespace rill::detail
