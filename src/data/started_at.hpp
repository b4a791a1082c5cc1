// How a transfer (a copy, a reduction, a replay) begins: as a task on one rank once its
// precondition has triggered, with an event that its own code triggers when the transfer is
// complete -- on whichever rank that is.
#pragma once
#include <utility>

#include "rill/event.hpp"
#include "rill/proc.hpp"

namespace rill::detail {

// Runs fn(args..., done) on `rank` once `after` has triggered and returns `done`, a new event that
// fn's transfer triggers or poisons. A poisoned precondition, or a task that throws, poisons `done`
// with the same cause.
template <class F, class... Args>
event started_at(int rank, event after, F fn, Args&&... args) {
  const event done = user_event::create();
  const event ran = proc(rank).spawn(rill::after(after), fn, std::forward<Args>(args)..., done);
  when_triggered(
      ran,
      [done](const poison_ptr& cause) {
        if (cause) event_poison(done, cause);
      },
      waiter_kind::other, done);
  return done;
}

}  // namespace rill::detail
