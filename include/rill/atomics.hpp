// Remote atomic operations on 32- and 64-bit integers (and add on double) through global pointers.
//
//   rill::global_ptr<std::int64_t> hits = ...;
//   std::int64_t before = rill::atomics::fetch_add(hits, 1).get();   // deferred: a future
//   rill::atomics::bit_xor(table + i, key, done);                      // feed-forward (completion_counter)
//   done.wait();
//
// Every operation is atomic with respect to every other rill::atomics operation on the element,
// whether it comes from the owner, another rank of the process, or another process: on memory the
// calling rank addresses directly (its own segment; on the local transport every rank's) it is a
// hardware atomic instruction on the spot; otherwise it travels to the owner in one message and
// the owner applies the same instruction. Operations with a future take a precondition `after`
// like every deferred operation; the fetching ones return the value before the operation
// (compare_exchange: the value it found, so it succeeded if that equals `expected`). The
// non-fetching ones also come in a feed-forward form that counts in a rill::completion_counter.
//
// Errors: a null pointer or a rank that does not exist throws rill::misuse_error at the call; an
// element outside the owner's segment, or misaligned, poisons the future (or the counter).
#pragma once

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>

#include "rill/completion_counter.hpp"
#include "rill/detail/at_home.hpp"
#include "rill/future.hpp"
#include "rill/global_ptr.hpp"

namespace rill::atomics {

template <class T>
concept integer = std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> || std::same_as<T, std::int64_t> ||
    std::same_as<T, std::uint64_t>;
template <class T>
concept addable = integer<T> || std::same_as<T, double>;
template <class T>
concept element = addable<T>;

namespace ops {
// The operations, as empty function objects: they travel in messages as zero bytes.
// fetch_add, fetch_and, fetch_or, fetch_xor: std::atomic_ref's member of the same name.
#define RILL_ATOMIC_RMW_OP(name)             \
  struct name {                              \
    template <class T>                       \
    T operator()(T* t, T v) const {          \
      return std::atomic_ref<T>(*t).name(v); \
    }                                        \
  };
RILL_ATOMIC_RMW_OP(fetch_add)
RILL_ATOMIC_RMW_OP(fetch_and)
RILL_ATOMIC_RMW_OP(fetch_or)
RILL_ATOMIC_RMW_OP(fetch_xor)
#undef RILL_ATOMIC_RMW_OP
struct fetch_min {
  template <class T>
  T operator()(T* t, T v) const {
    std::atomic_ref<T> a(*t);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
  }
};
struct fetch_max {
  template <class T>
  T operator()(T* t, T v) const {
    std::atomic_ref<T> a(*t);
    T old = a.load();
    while (v > old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
  }
};
struct exchange {
  template <class T>
  T operator()(T* t, T v) const {
    return std::atomic_ref<T>(*t).exchange(v);
  }
};
struct compare_exchange {
  template <class T>
  T operator()(T* t, T expected, T desired) const {
    std::atomic_ref<T>(*t).compare_exchange_strong(expected, desired);
    return expected;  // what was there: equal to the argument exactly when the swap happened
  }
};
struct load {
  template <class T>
  T operator()(T* t) const {
    return std::atomic_ref<T>(*t).load();
  }
};
struct store {
  template <class T>
  void operator()(T* t, T v) const {
    std::atomic_ref<T>(*t).store(v);
  }
};
// A fetching operation with its result dropped: the non-fetching forms.
template <class Op>
struct discard {
  template <class T>
  void operator()(T* t, T v) const {
    Op{}(t, v);
  }
};
}  // namespace ops

namespace detail {
template <class Op, class T>
future<T> fetching(global_ptr<T> p, T v, event after) {
  return rill::detail::run_at_home<rill::detail::serialised::no>(rill::detail::home_op::atomic, p, after, Op{}, v);
}
template <class Op, class T>
future<void> applying(global_ptr<T> p, T v, event after) {
  return rill::detail::run_at_home<rill::detail::serialised::no>(rill::detail::home_op::atomic, p, after,
                                                                 ops::discard<Op>{}, v);
}
template <class Op, class T>
void feeding(global_ptr<T> p, T v, completion_counter& done) {
  rill::detail::run_at_home_ff<rill::detail::serialised::no>(rill::detail::home_op::atomic, done, p, ops::discard<Op>{},
                                                             v);
}
}  // namespace detail

// Each family: fetch_NAME (a future of the value before), NAME (a future<void>), and NAME with a
// completion_counter (feed-forward).
#define RILL_ATOMIC_FAMILY(requirement, fetch_name, name, op)                                     \
  template <requirement T>                                                                        \
  future<T> fetch_name(global_ptr<T> p, std::type_identity_t<T> v, event after = event::none()) { \
    return detail::fetching<ops::op>(p, v, after);                                                \
  }                                                                                               \
  template <requirement T>                                                                        \
  future<void> name(global_ptr<T> p, std::type_identity_t<T> v, event after = event::none()) {    \
    return detail::applying<ops::op>(p, v, after);                                                \
  }                                                                                               \
  template <requirement T>                                                                        \
  void name(global_ptr<T> p, std::type_identity_t<T> v, completion_counter& done) {               \
    detail::feeding<ops::op>(p, v, done);                                                         \
  }
RILL_ATOMIC_FAMILY(addable, fetch_add, add, fetch_add)
RILL_ATOMIC_FAMILY(integer, fetch_bit_and, bit_and, fetch_and)
RILL_ATOMIC_FAMILY(integer, fetch_bit_or, bit_or, fetch_or)
RILL_ATOMIC_FAMILY(integer, fetch_bit_xor, bit_xor, fetch_xor)
RILL_ATOMIC_FAMILY(integer, fetch_min, min, fetch_min)
RILL_ATOMIC_FAMILY(integer, fetch_max, max, fetch_max)
#undef RILL_ATOMIC_FAMILY

template <element T>
future<T> exchange(global_ptr<T> p, std::type_identity_t<T> v, event after = event::none()) {
  return detail::fetching<ops::exchange>(p, v, after);
}

template <element T>
future<T> compare_exchange(global_ptr<T> p, std::type_identity_t<T> expected, std::type_identity_t<T> desired,
                           event after = event::none()) {
  return rill::detail::run_at_home<rill::detail::serialised::no>(rill::detail::home_op::atomic, p, after,
                                                                 ops::compare_exchange{}, expected, desired);
}

template <element T>
future<T> load(global_ptr<T> p, event after = event::none()) {
  return rill::detail::run_at_home<rill::detail::serialised::no>(rill::detail::home_op::atomic, p, after, ops::load{});
}

template <element T>
future<void> store(global_ptr<T> p, std::type_identity_t<T> v, event after = event::none()) {
  return rill::detail::run_at_home<rill::detail::serialised::no>(rill::detail::home_op::atomic, p, after, ops::store{},
                                                                 v);
}
template <element T>
void store(global_ptr<T> p, std::type_identity_t<T> v, completion_counter& done) {
  rill::detail::run_at_home_ff<rill::detail::serialised::no>(rill::detail::home_op::atomic, done, p, ops::store{}, v);
}

}  // namespace rill::atomics
