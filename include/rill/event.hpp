// Events: values that name something that will happen once, valid on every rank.
//
//   rill::user_event go = rill::user_event::create();   // owned by the calling rank, no messages
//   rill::event both = rill::merge(go, other);            // triggers once both have
//   go.trigger();                                         // from any rank
//   both.wait();                                          // suspends the calling task's fiber
//
// An event is 16 bytes: its owner rank, a slot of the owner's generational event table and a
// generation. A slot holds one untriggered generation at a time; once that generation triggers
// the slot is reused for the next one, so a rank stores as many slots as it ever had untriggered
// events at once. Every earlier generation of a slot has triggered.
//
// A failed operation *poisons* its event instead of triggering it normally: the event counts as
// triggered, everything that depends on it is poisoned with the same cause, and wait() throws
// rill::poisoned_error naming the original error, its rank and its operation.
//
// Event operations run on a rank: call them from a task or an active-message handler (elsewhere
// they throw rill::misuse_error). See docs/events.md for the protocol between ranks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace rill {

class event {
 public:
  // The event that has always triggered.
  constexpr event() = default;
  static constexpr event none() { return event(); }

  // True once the event has triggered (normally or poisoned). On a rank other than the owner the
  // first query of an untriggered event subscribes to the owner, so polling eventually succeeds.
  bool has_triggered() const;
  // True when the event has triggered poisoned and this rank knows it (false while untriggered).
  bool poisoned() const;
  // Waits until the event has triggered: inside a task the fiber is suspended and the worker runs
  // other work. Throws rill::poisoned_error if the event is poisoned.
  void wait() const;

  bool is_none() const { return gen_ == 0; }
  int owner() const { return static_cast<int>(owner_); }
  std::uint32_t slot() const { return slot_; }
  std::uint64_t generation() const { return gen_; }

  friend bool operator==(const event&, const event&) = default;
  friend auto operator<=>(const event&, const event&) = default;

  // For the runtime: the event named by these fields.
  static constexpr event from_parts(std::uint32_t owner, std::uint32_t slot, std::uint64_t gen) {
    event e;
    e.owner_ = owner;
    e.slot_ = slot;
    e.gen_ = gen;
    return e;
  }

 private:
  std::uint32_t owner_ = 0;
  std::uint32_t slot_ = 0;
  std::uint64_t gen_ = 0;  // 0: none()
};
static_assert(std::is_trivially_copyable_v<event> && sizeof(event) == 16);

// An event that the program triggers itself, from any rank, exactly once (trigger or poison).
class user_event : public event {
 public:
  constexpr user_event() = default;
  // A new untriggered event owned by the calling rank. No communication.
  static user_event create();
  // Triggers the event once `after` has triggered (at once when it has). If `after` is poisoned the
  // event is poisoned with the same cause. The call never blocks.
  void trigger(event after = event::none()) const;
  // Triggers the event poisoned: waiters throw rill::poisoned_error with this reason, the calling
  // rank and the operation "user_event::poison".
  void poison(const std::string& reason) const;

 private:
  explicit constexpr user_event(event e) : event(e) {}
};
static_assert(std::is_trivially_copyable_v<user_event> && sizeof(user_event) == 16);

// Counters of the calling rank's event table.
struct event_counts {
  std::uint64_t slots = 0;             // generational slots this rank owns (its storage)
  std::uint64_t created = 0;           // events ever created here
  std::uint64_t untriggered = 0;       // owned events not yet triggered
  std::uint64_t peak_untriggered = 0;  // the most untriggered at once
  std::uint64_t retired_slots = 0;     // slots no longer reused (they remember many poisoned generations)
  std::uint64_t remote_slots = 0;      // slots of other ranks this rank has observed
  // Protocol messages this rank sent (see docs/events.md).
  std::uint64_t subscriptions_sent = 0;  // to owners: "tell me when this generation triggers"
  std::uint64_t notifications_sent = 0;  // to subscribers: "triggered through this generation"
  std::uint64_t triggers_sent = 0;       // to owners: triggers of their events issued here
};
event_counts event_stats();

namespace detail {

// Why an event is poisoned: the first error, where it happened and in which operation.
struct poison_info {
  std::string reason;
  int rank = -1;
  std::string operation;
};
using poison_ptr = std::shared_ptr<const poison_info>;

// Something waiting for an event: a suspended fiber, a deferred trigger, a pending task, a merge.
// The runtime calls fn once: with discard == false when the event triggers (cause set when it is
// poisoned), or with discard == true when the rank stops before that (release resources only).
struct event_waiter {
  void (*fn)(event_waiter* self, bool discard) = nullptr;
  event_waiter* next = nullptr;
  std::uint64_t gen = 0;
  poison_ptr cause;
};

// What waits for an event, as the hang report and the event graph name it (rill/debug.hpp).
enum class waiter_kind : std::uint8_t { other, fiber, task, deferred_trigger, merge };

// Runs a targeted_waiter: its fn. A separate function, so that the hang report and the event graph
// can tell targeted waiters from others by their fn, without a field in every waiter (merges hold
// one waiter per input, and programs hold millions of them).
void targeted_waiter_fn(event_waiter* self, bool discard);

// A waiter that leads to another event: a task waiting for its precondition (it completes
// `target`). Deferred triggers and merge inputs have waiter types of their own (event_api.cpp).
struct targeted_waiter : event_waiter {
  targeted_waiter() { fn = &targeted_waiter_fn; }
  void (*invoke)(event_waiter* self, bool discard) = nullptr;  // what fn runs
  event target;
  waiter_kind kind = waiter_kind::other;
};

// Runs w->fn once `e` has triggered (on this rank's thread that learns it; at once if it has).
void event_on_trigger(event e, event_waiter* w);
// Trigger or poison an event owned by any rank, from the calling rank.
event event_create();
void event_trigger(event e);
void event_poison(event e, poison_ptr cause);
// Poisons `e` because a task threw `what` (an exception of type `type`) on this rank.
void event_task_failed(event e, const char* type, const char* what);
event merge_span(std::span<const event> events);
// An event that triggers, never poisoned, once every one of `events` has triggered, poisoned or
// not: what freeing the resources they used waits for (a failed use has ended too).
event all_ended(std::span<const event> events);
// A new event owned by the calling rank: the completion of a task spawned to `rank`.
event spawn_event(int rank);
// Triggers e (made by event_create or spawn_event for work that is not a task) once `after` has,
// poisoned as it is. Call from a task.
void event_trigger_after(event e, event after);
// A new event owned by the calling rank: the value of a promise's futures (rill/future.hpp).
event promise_event();

// Heap-allocated waiter that runs f(cause) once, then deletes itself.
template <class F, class Base = event_waiter>
struct callback_waiter final : Base {
  explicit callback_waiter(F&& fn) : f(std::move(fn)) {
    auto run = [](event_waiter* self, bool discard) {
      std::unique_ptr<callback_waiter> own(static_cast<callback_waiter*>(self));
      if (!discard) own->f(own->cause);
    };
    if constexpr (std::is_same_v<Base, targeted_waiter>)
      this->invoke = run;
    else
      this->fn = run;
  }
  F f;
};

// Calls f(const poison_ptr& cause) once `e` has triggered; cause is null unless e is poisoned.
template <class F>
void when_triggered(event e, F&& f) {
  event_on_trigger(e, new callback_waiter<std::decay_t<F>>(std::forward<F>(f)));
}

// The same, for a waiter that leads to `target`: `kind` (a task) says how, for
// the hang report and the event graph.
template <class F>
void when_triggered(event e, F&& f, waiter_kind kind, event target) {
  auto* w = new callback_waiter<std::decay_t<F>, targeted_waiter>(std::forward<F>(f));
  w->kind = kind;
  w->target = target;
  event_on_trigger(e, w);
}

}  // namespace detail

// An event that triggers once every input has, poisoned (at once) if any input is poisoned.
// Inputs that have triggered, none() and duplicates cost nothing; merging nothing gives none().
inline event merge(std::span<const event> events) { return detail::merge_span(events); }

template <class Range>
requires requires(const Range& r) {
  { *std::begin(r) } -> std::convertible_to<event>;
} &&(!std::is_convertible_v<const Range&, event>)event merge(const Range& events) {
  // A contiguous range of events (a vector, an array) is merged where it is, without a copy.
  if constexpr (requires { std::span<const event>(std::data(events), std::size(events)); }) {
    return detail::merge_span(std::span<const event>(std::data(events), std::size(events)));
  } else {
    std::vector<event> all(std::begin(events), std::end(events));
    return detail::merge_span(all);
  }
}

template <class... Events>
requires(std::is_convertible_v<const Events&, event>&&...) event merge(const Events&... events) {
  const std::array<event, sizeof...(Events)> all{static_cast<event>(events)...};
  return detail::merge_span(all);
}

}  // namespace rill
