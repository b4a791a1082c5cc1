// Reduction operators, shared by barriers, collectives, reduction LCOs and bulk reductions of
// instances (rill/reduction.hpp).
//
//   rill::reduce::sum<long>, product, max, min     -- reduction_op types, and bulk_reduction_op ones
//   any callable T(const T&, const T&) or void(T& acc, const T& v) works where an operator is taken
//
// For instances, each operator also has Realm's form (rill/reduction.hpp): lhs and rhs types,
// apply<exclusive>(lhs&, rhs) and fold<exclusive>(rhs&, rhs), atomic when not exclusive.
#pragma once

#include <atomic>
#include <concepts>
#include <functional>
#include <limits>
#include <type_traits>

namespace rill {

namespace detail {
// x = f(x, v) on an element other threads may update at once: a compare-and-swap loop.
template <class T, class F>
void atomically(T& x, T v, F f) {
  std::atomic_ref<T> a(x);
  T seen = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(seen, f(seen, v), std::memory_order_relaxed)) {
  }
}

// Realm's form of an operator Op whose combination is Op::apply(T&, const T&) and whose folds are
// the same combination: atomic (Atomic(x, v)) unless exclusive.
template <class Op, class T>
struct realm_form {
  using lhs = T;
  using rhs = T;
  template <bool exclusive>
  static void apply(lhs& l, rhs r) {
    if constexpr (exclusive)
      Op::apply(l, r);
    else
      Op::atomic_apply(l, r);
  }
  template <bool exclusive>
  static void fold(rhs& a, rhs b) {
    apply<exclusive>(a, b);
  }
};
}  // namespace detail

// Reduction operators: a value type, its identity, and apply(accumulator, value).
namespace reduce {
template <class T>
struct sum : detail::realm_form<sum<T>, T> {
  using value_type = T;
  static constexpr T identity = T(0);
  using detail::realm_form<sum<T>, T>::apply;
  static void apply(T& acc, const T& v) { acc += v; }
  static void atomic_apply(T& acc, T v) { std::atomic_ref<T>(acc).fetch_add(v, std::memory_order_relaxed); }
};
template <class T>
struct product : detail::realm_form<product<T>, T> {
  using value_type = T;
  static constexpr T identity = T(1);
  using detail::realm_form<product<T>, T>::apply;
  static void apply(T& acc, const T& v) { acc *= v; }
  static void atomic_apply(T& acc, T v) {
    detail::atomically(acc, v, [](T x, T y) { return x * y; });
  }
};
template <class T>
struct max : detail::realm_form<max<T>, T> {
  using value_type = T;
  static constexpr T identity = std::numeric_limits<T>::lowest();
  using detail::realm_form<max<T>, T>::apply;
  static void apply(T& acc, const T& v) {
    if (acc < v) acc = v;
  }
  static void atomic_apply(T& acc, T v) {
    detail::atomically(acc, v, [](T x, T y) { return x < y ? y : x; });
  }
};
template <class T>
struct min : detail::realm_form<min<T>, T> {
  using value_type = T;
  static constexpr T identity = std::numeric_limits<T>::max();
  using detail::realm_form<min<T>, T>::apply;
  static void apply(T& acc, const T& v) {
    if (v < acc) acc = v;
  }
  static void atomic_apply(T& acc, T v) {
    detail::atomically(acc, v, [](T x, T y) { return y < x ? y : x; });
  }
};
}  // namespace reduce

// A reduction operator type: R::value_type, R::identity and R::apply(value_type&, const value_type&).
template <class R>
concept reduction_op = requires(typename R::value_type& acc, const typename R::value_type& v) {
  { R::identity } -> std::convertible_to<typename R::value_type>;
  R::apply(acc, v);
};

namespace detail {

// A callable T(const T&, const T&) that returns the combination. (A concept, so that the result
// type is asked for only once the call is known to be valid: a fold-in-place callable
// void(T&, const T&) cannot take a const accumulator.)
template <class Op, class T>
concept returns_combination =
    std::is_invocable_v<Op&, const T&, const T&> && !std::is_void_v<std::invoke_result_t<Op&, const T&, const T&>>;

// acc = acc (op) v, for any of the three forms an operator may take.
template <class T, class Op>
void apply_reduction(Op& op, T& acc, const T& v) {
  if constexpr (reduction_op<Op>) {
    Op::apply(acc, v);
  } else if constexpr (returns_combination<Op, T>) {
    acc = std::invoke(op, static_cast<const T&>(acc), static_cast<const T&>(v));
  } else {
    static_assert(std::is_invocable_v<Op&, T&, const T&>,
                  "a reduction must be a reduction_op type, a callable T(const T&, const T&), or a callable "
                  "void(T& acc, const T& v)");
    std::invoke(op, acc, v);
  }
}

}  // namespace detail

}  // namespace rill
