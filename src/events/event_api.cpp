// The non-template halves of rill::event, rill::user_event and rill::merge.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>

#include "common/demangle.hpp"
#include "common/small_vector.hpp"
#include "core/outside_threads.hpp"
#include "events/event_table.hpp"
#include "events/events_module.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/rank.hpp"
#include "rill/task.hpp"
#include "scheduler/fiber.hpp"

namespace rill {

namespace {

detail::event_table& table(const char* what) { return detail::events_here(what); }

[[noreturn]] void throw_poisoned(const detail::poison_info& p) { throw poisoned_error(p.reason, p.rank, p.operation); }

// A fiber (or thread) waiting in event::wait().
struct fiber_waiter final : detail::event_waiter {
  fiber_waiter() { fn = &fired; }
  static void fired(detail::event_waiter* self, bool discard) {
    if (!discard) detail::wake(&static_cast<fiber_waiter*>(self)->w);  // last touch of *self
  }
  detail::waiter w;
};

// user_event::trigger(after): triggers (or poisons) `target` once `after` has triggered.
struct deferred_trigger final : detail::event_waiter {
  explicit deferred_trigger(event t) : target(t) { fn = &fired; }
  static void fired(detail::event_waiter* self, bool discard) {
    std::unique_ptr<deferred_trigger> own(static_cast<deferred_trigger*>(self));
    if (!discard) detail::event_poison(own->target, own->cause);
  }
  event target;
};

}  // namespace

// Off a worker thread, each call below runs as a task on the event's owner when this process holds
// it, else on this process's rank (src/core/outside_threads.hpp).

bool event::has_triggered() const {
  if (is_none()) return true;
  if (!detail::in_task())
    return detail::call_from_outside(owner(), "rill::event::has_triggered", [this] { return has_triggered(); });
  return table("rill::event::has_triggered").query(*this, false).triggered;
}

bool event::poisoned() const {
  if (is_none()) return false;
  if (!detail::in_task())
    return detail::call_from_outside(owner(), "rill::event::poisoned", [this] { return poisoned(); });
  const auto s = table("rill::event::poisoned").query(*this);
  return s.triggered && s.cause != nullptr;
}

void event::wait() const {
  if (is_none()) return;
  if (!detail::in_task()) return detail::call_from_outside(owner(), "rill::event::wait", [this] { wait(); });
  detail::event_table& t = table("rill::event::wait");
  const auto s = t.query(*this);
  if (s.triggered && s.known) {
    if (s.cause) throw_poisoned(*s.cause);
    return;
  }
  fiber_waiter self;
  detail::prepare_wait(self.w);
  t.on_trigger(*this, &self);
  detail::park(self.w);
  if (self.cause) throw_poisoned(*self.cause);
}

user_event user_event::create() {
  if (!detail::in_task()) return detail::call_from_outside(-1, "rill::user_event::create", [] { return create(); });
  detail::event_table& t = table("rill::user_event::create");
  const event e = t.create();
  t.set_op(e, detail::op_kind::user_event);
  return user_event(e);
}

void user_event::trigger(event after) const {
  if (!detail::in_task())
    return detail::call_from_outside(owner(), "rill::user_event::trigger", [this, after] { trigger(after); });
  detail::event_table& t = table("rill::user_event::trigger");
  if (after.is_none()) {
    t.trigger(*this, nullptr);
    return;
  }
  t.on_trigger(after, new deferred_trigger(*this));
}

void user_event::poison(const std::string& reason) const {
  if (!detail::in_task())
    return detail::call_from_outside(owner(), "rill::user_event::poison", [this, &reason] { poison(reason); });
  detail::event_table& t = table("rill::user_event::poison");
  t.trigger(*this,
            std::make_shared<const detail::poison_info>(detail::poison_info{reason, rank_me(), "user_event::poison"}));
}

event_counts event_stats() { return table("rill::event_stats").counts(); }

namespace detail {

void event_on_trigger(event e, event_waiter* w) { table("rill: waiting on an event").on_trigger(e, w); }

event event_create() { return table("rill: creating an event").create(); }

event promise_event() {
  if (!in_task()) return call_from_outside(-1, "rill::promise", [] { return promise_event(); });
  event_table& t = table("rill::promise");
  const event e = t.create();
  t.set_op(e, op_kind::promise);
  return e;
}

event spawn_event(int rank) {
  event_table& t = table("rill::proc::spawn");
  const event e = t.create();
  t.set_op(e, op_kind::spawn, rank);
  return e;
}

void event_trigger_after(event e, event after) {
  event_table& t = table("rill: triggering an event");
  if (after.is_none())
    t.trigger(e, nullptr);
  else
    t.on_trigger(after, new deferred_trigger(e));
}

void event_trigger(event e) { table("rill: triggering an event").trigger(e, nullptr); }

// Triggers e, poisoned when cause is set (also used for "trigger unless the precondition failed").
void event_poison(event e, poison_ptr cause) { table("rill: triggering an event").trigger(e, std::move(cause)); }

void event_task_failed(event e, const char* type, const char* what) {
  event_poison(e, std::make_shared<const poison_info>(poison_info{demangled(type) + ": " + what, rank_me(), "task"}));
}

namespace {

// A merge of n inputs: each input has a waiter node, stored right after the record in one block
// (one allocation, and the nodes an input's trigger touches lie together); the last to fire frees it.
struct merge_record {
  struct input final : event_waiter {
    merge_record* owner = nullptr;
  };
  static merge_record* make(event result, std::size_t n) {
    void* block = ::operator new(sizeof(merge_record) + n * sizeof(input));
    auto* m = new (block) merge_record(result, n);
    for (std::size_t i = 0; i < n; ++i) {
      input* in = new (&m->inputs()[i]) input;
      in->owner = m;
      in->fn = &input_fired;
    }
    return m;
  }
  input* inputs() { return reinterpret_cast<input*>(this + 1); }
  static void input_fired(event_waiter* self, bool discard) {
    merge_record* m = static_cast<input*>(self)->owner;
    if (!discard) {
      // The first poisoned input poisons the result at once: dependents need not wait for the rest.
      if (self->cause && !m->done.exchange(true, std::memory_order_acq_rel)) event_poison(m->result, self->cause);
    }
    m->release(discard);
  }
  void release(bool discard) {
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!discard && !done.exchange(true, std::memory_order_acq_rel)) event_trigger(result);
    for (std::size_t i = 0; i < count; ++i) inputs()[i].~input();
    this->~merge_record();
    ::operator delete(this);
  }
  event result;
  std::size_t count;
  std::atomic<std::ptrdiff_t> remaining;
  std::atomic<bool> done{false};

 private:
  merge_record(event r, std::size_t n) : result(r), count(n), remaining(static_cast<std::ptrdiff_t>(n) + 1) {}
};
static_assert(sizeof(merge_record) % alignof(merge_record::input) == 0);

}  // namespace

void targeted_waiter_fn(event_waiter* self, bool discard) {
  static_cast<targeted_waiter*>(self)->invoke(self, discard);
}

waiter_kind waiter_kind_of(const event_waiter& w) {
  if (w.fn == &targeted_waiter_fn) return static_cast<const targeted_waiter&>(w).kind;
  if (w.fn == &fiber_waiter::fired) return waiter_kind::fiber;
  if (w.fn == &deferred_trigger::fired) return waiter_kind::deferred_trigger;
  if (w.fn == &merge_record::input_fired) return waiter_kind::merge;
  return waiter_kind::other;
}

event waiter_target(const event_waiter& w) {
  if (w.fn == &targeted_waiter_fn) return static_cast<const targeted_waiter&>(w).target;
  if (w.fn == &merge_record::input_fired) return static_cast<const merge_record::input&>(w).owner->result;
  if (w.fn == &deferred_trigger::fired) return static_cast<const deferred_trigger&>(w).target;
  return event::none();
}

bool waiter_runs_inline(const event_waiter& w) {
  if (w.fn != &fiber_waiter::fired) return false;
  const auto* f = static_cast<const fiber_rec*>(static_cast<const fiber_waiter&>(w).w.fiber);
  return f && f->inline_depth > 0;
}

event merge_span(std::span<const event> events) {
  if (!in_task()) return call_from_outside(-1, "rill::merge", [events] { return merge_span(events); });
  event_table& t = table("rill::merge");
  // Most merges have a few inputs (a launch's waits, a task's preconditions): no allocation then.
  small_vector<event, 8> pending;
  pending.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    const event& e = events[i];
    if (e.is_none()) continue;
    const auto s = t.query(e, false);  // (a poisoned input is the result: it is passed on, not observed)
    if (s.triggered && s.known) {
      if (s.cause) {
        // A poisoned input: the merge is poisoned with its cause. The other inputs are its too:
        // seen now if poisoned already, and when they trigger otherwise (an index launch whose
        // points fail one after another is one error passed on, not several nobody observed).
        for (const event& before : pending) when_triggered(before, [](const poison_ptr&) {});
        for (const event& other : events.subspan(i + 1)) {
          if (other.is_none() || other == e) continue;
          const auto o = t.query(other, true);
          if (!o.triggered || !o.known) when_triggered(other, [](const poison_ptr&) {});
        }
        return e;
      }
      continue;
    }
    pending.push_back(e);
  }
  std::sort(pending.begin(), pending.end());
  pending.erase(std::unique(pending.begin(), pending.end()), pending.end());
  if (pending.empty()) return event::none();
  if (pending.size() == 1) return pending.front();
  const event result = t.create();
  t.set_op(result, op_kind::merge);
  if (t.trace().graph_on()) t.trace().record_merge(events, result);
  auto* m = merge_record::make(result, pending.size());
  // The extra count in `remaining` keeps the record alive until every input is registered.
  for (std::size_t i = 0; i < pending.size(); ++i) t.on_trigger(pending[i], &m->inputs()[i]);
  m->release(false);
  return result;
}

event all_ended(std::span<const event> events) {
  struct countdown {
    std::atomic<std::size_t> left{1};  // (one for the registration, so that it ends after it)
    user_event ended = user_event::create();
    void done() {
      if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) ended.trigger();
    }
  };
  auto c = std::make_shared<countdown>();
  for (const event& e : events) {
    if (e.is_none()) continue;
    c->left.fetch_add(1, std::memory_order_relaxed);
    when_triggered(e, [c](const poison_ptr&) { c->done(); });
  }
  const event ended = c->ended;
  c->done();
  return ended;
}

}  // namespace detail
}  // namespace rill
