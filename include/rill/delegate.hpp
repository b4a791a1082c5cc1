// Delegate operations (Grappa §2.3): a small function runs on an element where it lives.
//
//   rill::global_ptr<std::int64_t> counter = ...;                 // on any rank
//   auto before = rill::delegate::call(counter, [](std::int64_t& c) { return c++; }).get();
//
//   rill::completion_counter done;                                // feed-forward: no future each
//   for (int i = 0; i < n; ++i)
//     rill::delegate::call_ff(done, bins + bin(i), [](Bin& b, double x) { b.add(x); }, sample(i));
//   done.wait();
//
// fn(element, args...) runs on the element's home when the calling rank cannot address it, else
// on the calling thread; either way, delegates on the same element (the address the pointer names)
// are atomic with each other, so fn needs no atomic instructions. That is what makes delegates the
// synchronisation of choice for low-locality data: one message carries the operation, instead of
// fetching the data, changing it and writing it back.
//
// How: on an element of a scalar type (an integer, a floating-point number, a pointer, an enum) of
// up to 8 bytes, fn runs on a copy that one compare-and-swap stores, so rill::atomics on the same
// element are never lost either; when another update came in between, fn runs again on the new
// value -- so fn must not change anything but the element and its result. On other elements a lock
// of the owner's serialises the delegates on one element; rill::atomics on a member of such an
// element are not serialised with them.
//
// fn must be shippable (a function, a capture-less lambda, or one whose captures are trivially
// copyable) and short: it runs inside the message handler, perhaps holding the lock, so it must not
// suspend (no wait, get, yield or finish) and must not start another delegate. Arguments travel
// as for rill::am::send. Delegates are not serialised with rput/rget on the same element.
//
// Errors: a null pointer or a rank that does not exist throws rill::misuse_error at the call; an
// element outside the owner's segment, or what fn throws, poisons the future (call) or is rethrown
// by the counter's wait() (call_ff).
#pragma once

#include <atomic>
#include <type_traits>
#include <utility>

#include "rill/completion_counter.hpp"
#include "rill/detail/at_home.hpp"
#include "rill/future.hpp"
#include "rill/global_ptr.hpp"

namespace rill::delegate {

namespace detail {
// Elements whose delegates commit with a compare-and-swap instead of taking the lock.
template <class T>
inline constexpr bool swapped_in = std::is_scalar_v<T> && sizeof(T) <= 8 && std::atomic_ref<T>::is_always_lock_free &&
                                   alignof(T) >= std::atomic_ref<T>::required_alignment;

// call(element) on an element: on a copy committed by compare-and-swap (and called again on the new
// value when another update came in between) where swapped_in, else in place (under the lock).
template <class T, class Call>
auto apply_to_element(T* element, Call&& call) {
  if constexpr (swapped_in<T>) {
    std::atomic_ref<T> word(*element);
    T seen = word.load(std::memory_order_acquire);
    for (;;) {
      T value = seen;
      if constexpr (std::is_void_v<decltype(call(value))>) {
        call(value);
        if (word.compare_exchange_weak(seen, value, std::memory_order_acq_rel, std::memory_order_acquire)) return;
      } else {
        auto result = call(value);
        if (word.compare_exchange_weak(seen, value, std::memory_order_acq_rel, std::memory_order_acquire))
          return result;
      }
    }
  } else {
    return call(*element);
  }
}

template <class T>
inline constexpr rill::detail::serialised serialisation =
    swapped_in<T> ? rill::detail::serialised::no : rill::detail::serialised::yes;

// fn as an operation on the element's address (what rill::detail::run_at_home runs).
template <class F>
struct on_element {
  F fn;
  template <class T, class... A>
  auto operator()(T* element, A&... args) {  // by value: a result travels back as a copy
    return detail::apply_to_element(element, [&](T& e) { return fn(e, args...); });
  }
};
// A function, as an offset in the code: a raw function pointer would be wrong in another process
// of the same binary (each maps it at its own address).
template <class R, class... P>
struct on_element<R (*)(P...)> {
  std::intptr_t code;
  on_element(R (*f)(P...)) : code(rill::detail::code_offset(reinterpret_cast<const void*>(f))) {}
  template <class T, class... A>
  R operator()(T* element, A&... args) const {
    const auto f = reinterpret_cast<R (*)(P...)>(const_cast<void*>(rill::detail::code_address(code)));
    return detail::apply_to_element(element, [&](T& e) { return f(e, args...); });
  }
};
}  // namespace detail

// fn(element, args...) at the element's home once `after` has triggered; a future of its result.
template <class T, class F, class... Args>
auto call_after(event after, global_ptr<T> p, F fn, Args... args) {
  static_assert(rill::detail::shippable<F>,
                "rill::delegate: fn must be a function or a lambda whose captures are trivially copyable");
  return rill::detail::run_at_home<detail::serialisation<T>>(rill::detail::home_op::delegate, p, after,
                                                             detail::on_element<F>{std::move(fn)}, std::move(args)...);
}

// fn(element, args...) at the element's home, now; a future of its result.
template <class T, class F, class... Args>
auto call(global_ptr<T> p, F fn, Args... args) {
  return call_after(event::none(), p, std::move(fn), std::move(args)...);
}

// The feed-forward form: no future; `done` counts the call until it has run (fn's result is dropped).
template <class T, class F, class... Args>
void call_ff(completion_counter& done, global_ptr<T> p, F fn, Args... args) {
  static_assert(rill::detail::shippable<F>,
                "rill::delegate: fn must be a function or a lambda whose captures are trivially copyable");
  rill::detail::run_at_home_ff<detail::serialisation<T>>(rill::detail::home_op::delegate, done, p,
                                                         detail::on_element<F>{std::move(fn)}, std::move(args)...);
}

}  // namespace rill::delegate
