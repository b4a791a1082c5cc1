// Data-driven futures and promises (Habanero's DDFs, HPX-5's future LCO), built on events.
//
//   rill::promise<int> p;                       // owned by the calling rank
//   rill::future<int> f = p.get_future();
//   rill::async_at(1, [](rill::promise<int> q) { q.put(42); }, p);   // a remote put
//   int v = f.get();                            // suspends the calling task's fiber until put
//
// A promise is put once (a second put is an error: rill::misuse_error on the rank that sees it).
// Its futures share the value: get() waits and returns it, wait() only waits, and a future is an
// event (as_event(), or where an event is expected) that triggers with the put. A promise that is
// poisoned, or a task behind a future that threw, poisons the future: get() and wait() throw
// rill::poisoned_error naming the cause.
//
// Across ranks: a promise can be passed to another rank (as an argument of async_at, rpc or
// am::send); a put there sends the value to the promise's owner, whose futures then see it. A
// promise passed to another rank keeps its value storage alive until that copy is put. Futures
// stay on the rank that made them; to use a value elsewhere, pass the promise or ship the value.
//
// async_future, then, async_await and rpc start tasks in the calling task's finish scope.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/am.hpp"
#include "rill/error.hpp"
#include "rill/event.hpp"
#include "rill/finish.hpp"

namespace rill {

template <class T>
class future;
template <class T>
class promise;
template <class T>
future<std::decay_t<T>> make_ready_future(T&& value);

namespace detail {

// What a promise and its futures share: the event that the put triggers, and the value.
struct future_core {
  event ready;
  std::atomic<bool> satisfied{false};
};
template <class T>
struct future_state : future_core {
  std::optional<T> value;
};
template <>
struct future_state<void> : future_core {};

// Keeps a state alive while a copy of its promise is on another rank; returns its key.
std::uint64_t promise_pin(std::shared_ptr<future_core> state);
// On the owner: the state of a key pinned here, unpinned once (a remote copy was put or poisoned).
// Throws misuse_error when the key is not pinned (that copy was put already).
std::shared_ptr<future_core> promise_unpin(std::uint64_t key);
// A task that waited for a poisoned event outside any finish scope will not run: says so.
void report_dropped_task(const poison_ptr& cause);
// Marks a state satisfied; throws misuse_error naming `what` if it already was.
void promise_claim(future_core& s, const char* what);
// Poisons the state's event with `reason` (operation `what`) from the calling rank.
void promise_poison(future_core& s, const std::string& reason, const std::string& what);
// The poisoned_error of a cause, as an exception_ptr (for a finish scope).
std::exception_ptr poisoned_exception(const poison_ptr& cause);

template <class T>
void state_put(future_state<T>& s, T&& v) {
  promise_claim(s, "rill::promise::put");
  s.value.emplace(std::move(v));
  event_trigger(s.ready);
}
inline void state_put(future_state<void>& s) {
  promise_claim(s, "rill::promise::put");
  event_trigger(s.ready);
}

// A promise that lives on `owner`, pinned there under `key` until it is put or poisoned: what a
// copy of a promise on another rank is. Trivially copyable, so hot paths can send it without
// serializing.
template <class T>
struct promise_ref {
  int owner = -1;
  std::uint64_t key = 0;

  static std::shared_ptr<future_state<T>> unpinned(std::uint64_t key) {
    return std::static_pointer_cast<future_state<T>>(promise_unpin(key));
  }
  // From the owner itself the put is direct, without a message to self.
  template <class U = T>
  requires(!std::is_void_v<U>) void put(U value) const {
    if (owner == rank_me())
      state_put(*unpinned(key), T(std::move(value)));
    else
      am::send(
          owner, [](std::uint64_t k, T v) { state_put(*unpinned(k), std::move(v)); }, key, T(std::move(value)));
  }
  void put() const requires std::is_void_v<T> {
    if (owner == rank_me())
      state_put(*unpinned(key));
    else
      am::send(
          owner, [](std::uint64_t k) { state_put(*unpinned(k)); }, key);
  }
  void poison(const std::string& reason, const std::string& operation = "promise::poison") const {
    am::send(
        owner,
        [](std::uint64_t k, int from, const std::string& r, const std::string& op) {
          promise_poison(*unpinned(k), r + " (poisoned on rank " + std::to_string(from) + ")", op);
        },
        key, rank_me(), reason, operation);
  }
};

template <class F, class T>
struct then_result : std::invoke_result<F&, const T&> {};
template <class F>
struct then_result<F, void> : std::invoke_result<F&> {};

// Runs fn() as a task of the calling task's finish scope once `pre` has triggered. If pre is
// poisoned fn does not run, and on_poison(cause) returns the error the scope rethrows (null:
// none); outside any scope that error is reported instead.
template <class F, class P>
void run_after(event pre, F&& fn, P&& on_poison) {
  finish_proxy* scope = current_finish();
  if (scope) finish_count(scope);
  when_triggered(pre,
                 [scope, t = std::forward<F>(fn), bad = std::forward<P>(on_poison)](const poison_ptr& cause) mutable {
                   if (!cause) {
                     task_submit(make_scoped_task(scope, std::move(t)));
                     return;
                   }
                   std::exception_ptr error = bad(cause);
                   if (scope)
                     finish_task_ended(scope, std::move(error));
                   else if (error)
                     report_dropped_task(cause);
                 });
}

}  // namespace detail

template <class T>
class future {
 public:
  using value_type = T;
  future() = default;
  // A future<void> that is ready when `e` triggers (and poisoned when e is).
  static future from_event(event e) requires std::is_void_v<T> {
    auto s = std::make_shared<detail::future_state<void>>();
    s->ready = e;
    s->satisfied = true;
    return future(std::move(s));
  }

  bool valid() const { return st_ != nullptr; }
  bool ready() const { return state().ready.has_triggered(); }
  void wait() const { state().ready.wait(); }
  // Waits, then returns the value (throws rill::poisoned_error when poisoned).
  decltype(auto) get() const& {
    wait();
    if constexpr (!std::is_void_v<T>) return static_cast<const T&>(*st_->value);
  }
  // On a temporary future, a copy: a reference into it would dangle at the end of the full
  // expression -- in `for (auto x : rpc(...).get())`, before the loop runs.
  auto get() && {
    wait();
    if constexpr (!std::is_void_v<T>) return T(*st_->value);
  }
  event as_event() const { return state().ready; }
  operator event() const { return as_event(); }

  // A future of fn(value) (fn() for future<void>), run as a task once this one is ready;
  // poisoned, without running fn, when this one is poisoned.
  template <class F>
  auto then(F&& fn) const;

 private:
  friend class promise<T>;
  template <class U>
  friend future<std::decay_t<U>> make_ready_future(U&& value);
  explicit future(std::shared_ptr<detail::future_state<T>> s) : st_(std::move(s)) {}
  const detail::future_state<T>& state() const {
    if (!st_) throw misuse_error("rill::future: used without a promise (default-constructed)");
    return *st_;
  }
  std::shared_ptr<detail::future_state<T>> st_;
};

template <class T>
class promise {
 public:
  // A promise owned by the calling rank (which must be running a Rill task or handler).
  promise() : st_(std::make_shared<detail::future_state<T>>()) { st_->ready = detail::promise_event(); }

  future<T> get_future() const {
    if (!st_) throw misuse_error("rill::promise::get_future: this copy of the promise is on another rank");
    return future<T>(st_);
  }

  // Satisfies the promise: its futures become ready with the value. Once only.
  template <class U = T>
  requires(!std::is_void_v<U>) void put(U value) const {
    if (st_)
      detail::state_put(*st_, T(std::move(value)));
    else
      remote_.put(T(std::move(value)));
  }
  void put() const requires std::is_void_v<T> {
    if (st_)
      detail::state_put(*st_);
    else
      remote_.put();
  }
  // Satisfies the promise poisoned: get() and wait() on its futures throw rill::poisoned_error
  // with this reason and `operation` (what failed, in the words of the program's own API).
  void poison(const std::string& reason, const std::string& operation = "promise::poison") const {
    if (st_)
      detail::promise_poison(*st_, reason, operation);
    else
      remote_.poison(reason, operation);
  }
  // The rank whose futures the promise satisfies.
  int owner() const { return st_ ? rank_me() : remote_.owner; }

  // Passing a promise to another rank (rill's serialization calls these).
  template <class Archive>
  void save(Archive& ar) const {
    const detail::promise_ref<T> r = ref();
    ar(r.owner, r.key);
  }
  template <class Archive>
  void load(Archive& ar) {
    st_.reset();
    ar(remote_.owner, remote_.key);
  }

  // The promise as a trivially copyable reference that can be put from any rank, once.
  detail::promise_ref<T> ref() const {
    return st_ ? detail::promise_ref<T>{rank_me(), detail::promise_pin(st_)} : remote_;
  }

 private:
  template <class>
  friend class future;
  std::shared_ptr<detail::future_state<T>> st_;  // on the owner
  detail::promise_ref<T> remote_;                // on another rank: where to send the put
};

// A future that is ready with `value` already.
template <class T>
future<std::decay_t<T>> make_ready_future(T&& value) {
  auto s = std::make_shared<detail::future_state<std::decay_t<T>>>();
  s->value.emplace(std::forward<T>(value));
  s->satisfied = true;  // s->ready stays event::none(), which has triggered
  return future<std::decay_t<T>>(std::move(s));
}
inline future<void> make_ready_future() { return future<void>::from_event(event::none()); }

namespace detail {

// The on_poison of run_after for an operation that answers through p: poisons p with the cause.
template <class T>
auto poison_into(promise<T> p) {
  return [p](const poison_ptr& cause) {
    try {
      std::rethrow_exception(poisoned_exception(cause));
    } catch (const poisoned_error& e) {
      p.poison(e.reason(), e.operation());
    }
    return std::exception_ptr();
  };
}

// Puts fn(args...) into p, or poisons p with what fn threw.
template <class R, class F, class... A>
void fulfil(const promise<R>& p, F&& fn, A&&... args) {
  try {
    if constexpr (std::is_void_v<R>) {
      std::invoke(fn, std::forward<A>(args)...);
      p.put();
    } else {
      p.put(std::invoke(fn, std::forward<A>(args)...));
    }
  } catch (const poisoned_error& e) {
    p.poison(e.reason(), e.operation());
  } catch (const std::exception& e) {
    p.poison(std::string("a task threw: ") + e.what(), "task");
  }
}

}  // namespace detail

template <class T>
template <class F>
auto future<T>::then(F&& fn) const {
  using R = typename detail::then_result<std::decay_t<F>, T>::type;
  promise<R> p;
  future<R> out = p.get_future();
  detail::run_after(
      as_event(),
      [p, st = st_, f = std::forward<F>(fn)]() mutable {
        if constexpr (std::is_void_v<T>)
          detail::fulfil(p, f);
        else
          detail::fulfil(p, f, static_cast<const T&>(*st->value));
      },
      [st = p.st_](const detail::poison_ptr& cause) {
        detail::promise_claim(*st, "rill::future::then");
        detail::event_poison(st->ready, cause);
        return std::exception_ptr();
      });
  return out;
}

// Runs fn() as a task of this rank (in the caller's finish scope); returns a future of its result.
// What fn throws poisons the future (and does not reach the finish scope).
template <class F>
auto async_future(F&& fn) {
  using R = std::invoke_result_t<std::decay_t<F>&>;
  promise<R> p;
  future<R> out = p.get_future();
  async([p, f = std::forward<F>(fn)]() mutable { detail::fulfil(p, f); });
  return out;
}

// Runs fn() as a task of this rank once every future (or event) in `deps` is ready. If one is
// poisoned, fn does not run and the caller's finish scope rethrows the poisoned_error.
template <class F, class... Deps>
void async_await(F&& fn, const Deps&... deps) {
  detail::run_after(merge(static_cast<event>(deps)...), std::forward<F>(fn), &detail::poisoned_exception);
}

// A future<void> ready once every argument (futures or events) is; poisoned if one is.
template <class... Deps>
future<void> when_all(const Deps&... deps) {
  return future<void>::from_event(merge(static_cast<event>(deps)...));
}

// Runs fn(args...) on rank `rank` (in the caller's finish scope) and returns a future of its
// result on the calling rank: UPC++'s rpc. fn and args as for async_at.
template <class F, class... Args>
auto rpc(int rank, F&& fn, Args&&... args) {
  using Fn = std::decay_t<F>;
  using R = std::invoke_result_t<Fn&, std::decay_t<Args>&&...>;
  promise<R> p;
  future<R> out = p.get_future();
  if constexpr (detail::shippable<Fn>) {
    using S = detail::shipped_callable<Fn>;
    async_at(
        rank,
        [](promise<R> q, S s, std::decay_t<Args>... a) {
          Fn f = s.unpack();
          detail::fulfil(q, f, std::move(a)...);
        },
        p, S::pack(fn), std::forward<Args>(args)...);
  } else {
    if (rank != rank_me()) {
      throw misuse_error(
          "rill::rpc: a callable with captures that are not trivially copyable can run only on the calling rank");
    }
    async([p, f = std::forward<F>(fn), tup = std::make_tuple(std::forward<Args>(args)...)]() mutable {
      detail::fulfil(p, [&] { return std::apply(f, std::move(tup)); });
    });
  }
  return out;
}

}  // namespace rill
