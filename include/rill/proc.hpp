// Processors and deferred task launch.
//
//   rill::event a = rill::proc(1).spawn(produce, 42);                 // runs on rank 1
//   rill::event b = rill::proc(2).spawn(rill::after(a), consume, 7);  // on rank 2, once a has triggered
//   b.wait();
//
// A proc names a processor: today, the worker pool of one rank. spawn() never blocks and returns
// the task's completion event, which triggers when the task returns and is poisoned when it throws
// (operation "task") or when its precondition is poisoned (then the task does not run and the
// event carries the precondition's original cause).
//
// The precondition goes first, wrapped in rill::after, so it cannot be mistaken for an argument
// of the task (which may well be an event itself).
//
// On another rank the callable must be a function, a capture-less lambda or a lambda whose
// captures are trivially copyable, and the arguments anything rill::am::send can carry; the task is
// shipped at once and waits for its precondition there (no round trip to the caller). On the
// calling rank any callable and arguments work.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "rill/am.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/rank.hpp"
#include "rill/task.hpp"

namespace rill {

// A precondition for spawn: the task starts only once `ev` has triggered.
struct after {
  explicit after(event e) : ev(e) {}
  event ev;
};

namespace detail {

// A callable as trivially copyable bytes, so that it can travel as an active-message argument
// (functions as code offsets, as rill::am::send does for its own callable).
template <class Fn>
struct shipped_callable {
  std::byte bytes[callable_bytes<Fn>() ? callable_bytes<Fn>() : 1];
  static shipped_callable pack(const Fn& f) {
    shipped_callable s{};
    store_callable<Fn>(s.bytes, f);
    return s;
  }
  Fn unpack() const { return load_callable<Fn>(bytes); }
};

// Runs body(); what it throws poisons `done` (as a failed task) and makes this return false.
template <class Body>
bool run_guarded(event done, Body& body) {
  try {
    body();
    return true;
  } catch (const std::exception& e) {
    event_task_failed(done, typeid(e).name(), e.what());
  } catch (...) {
    event_task_failed(done, "unknown exception", "a task threw something that is not a std::exception");
  }
  return false;
}

// Hands make_task(run) to Submit (a worker's queue, a channel's) once `pre` has triggered;
// poisons `done` instead when pre is poisoned. Submit is a template argument: a direct call.
template <void (*Submit)(task_record*), class Run>
void submit_when(event pre, event done, Run run) {
  if (pre.is_none()) {
    Submit(make_task(std::move(run)));
    return;
  }
  when_triggered(
      pre,
      [done, r = std::move(run)](const poison_ptr& cause) mutable {
        if (cause)
          event_poison(done, cause);
        else
          Submit(make_task(std::move(r)));
      },
      waiter_kind::task, done);
}

// Runs body() as a task on the calling rank once `pre` has triggered, then triggers `done`;
// poisons `done` instead when pre is poisoned or body throws.
template <class Body>
void spawn_when(event pre, event done, Body&& body) {
  submit_when<&task_submit>(pre, done, [done, b = std::forward<Body>(body)]() mutable {
    if (run_guarded(done, b)) event_trigger(done);
  });
}

template <class Fn>
inline constexpr bool shippable = std::is_pointer_v<Fn> || std::is_trivially_copyable_v<Fn>;

}  // namespace detail

class proc {
 public:
  explicit proc(int rank) : rank_(rank) {}
  // The processor running the calling task.
  static proc here() { return proc(rank_me()); }
  int rank() const { return rank_; }
  friend bool operator==(const proc&, const proc&) = default;

  // Runs fn(args...) on this processor; returns its completion event. Never blocks.
  template <class F, class... Args>
  requires(!std::is_same_v<std::decay_t<F>, after>) event spawn(F&& fn, Args&&... args)
  const { return spawn(after(event::none()), std::forward<F>(fn), std::forward<Args>(args)...); }

  // Runs fn(args...) on this processor once `pre` has triggered; returns its completion event.
  template <class F, class... Args>
  event spawn(after pre, F&& fn, Args&&... args) const {
    require_rank();
    require_callable<std::decay_t<F>>();  // before the event exists: a refused spawn makes none
    const event done = detail::spawn_event(rank_);
    spawn_into(done, pre, std::forward<F>(fn), std::forward<Args>(args)...);
    return done;
  }

  // As spawn, triggering `done`, an event that detail::spawn_event(rank()) made on the calling
  // rank: for a layer that must name the task's event before the task exists (the analysis of
  // launches on regions records it first).
  template <class F, class... Args>
  void spawn_into(event done, after pre, F&& fn, Args&&... args) const {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&, std::decay_t<Args>&&...>,
                  "rill::proc::spawn: the callable cannot be called with these arguments");
    require_rank();
    require_callable<Fn>();
    if (rank_ == rank_me()) {
      detail::spawn_when(pre.ev, done,
                         [f = std::forward<F>(fn), tup = std::make_tuple(std::forward<Args>(args)...)]() mutable {
                           std::apply(f, std::move(tup));
                         });
      return;
    }
    if constexpr (detail::shippable<Fn>) {
      using S = detail::shipped_callable<Fn>;
      am::send(
          rank_,
          [](event p, event d, S s, std::decay_t<Args>... a) {
            detail::spawn_when(p, d, [f = s.unpack(), tup = std::make_tuple(std::move(a)...)]() mutable {
              std::apply(f, std::move(tup));
            });
          },
          pre.ev, done, S::pack(fn), std::forward<Args>(args)...);
    }
  }

 private:
  template <class Fn>
  void require_callable() const {
    if constexpr (!detail::shippable<Fn>) {
      if (rank_ != rank_me()) {
        throw misuse_error(
            "rill::proc::spawn: a callable with captures that are not trivially copyable can run only on the "
            "calling rank; pass the data as arguments");
      }
    }
  }
  void require_rank() const {
    if (rank_ < 0 || rank_ >= rank_n()) throw misuse_error("rill::proc::spawn: no such rank");
  }
  int rank_;
};
static_assert(std::is_trivially_copyable_v<proc>);

}  // namespace rill
