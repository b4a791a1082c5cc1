// Bulk reductions (Realm §7.1): reduction operators, reduction fold instances, reducers that tasks
// fold values into without locks, and deferred reductions of one instance into another.
//
//   struct add { using lhs = double; using rhs = double;             // a reduction operator
//                static constexpr rhs identity = 0;
//                template <bool exclusive> static void apply(lhs& l, rhs r);  // l = l + r
//                template <bool exclusive> static void fold(rhs& a, rhs b); }; // a = a + b
//   auto [partial, ready] = rill::create_fold_instance<add>(rill::memory::system(me), space, f);
//   rill::reducer<add, 1> r(partial, f);  r({i}, 1.0);                // in tasks on its rank
//   rill::event done = rill::reduce_into<add>(partial, f, totals, g, after); // totals[p] += partial[p]
//
// An operator is a type: `lhs`, the element reduced into; `rhs`, the value reduced; `identity`,
// the rhs that folds as nothing; `apply<exclusive>(lhs&, rhs)`, one reduction into an element;
// `fold<exclusive>(rhs&, rhs)`, two reductions combined into one, which need not be apply (for
// exponentiation, fold multiplies). With exclusive == false both must be safe when other threads
// reduce into the same element at once (atomically); with true the caller guarantees that no one
// else does. The operator needs no registration: its code travels as the program's own, as
// handlers do. rill::reduce::sum, product, min and max (rill/reduce.hpp) are such operators for
// arithmetic types. See docs/data.md.
#pragma once
#include <atomic>
#include <concepts>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "rill/copy.hpp"
#include "rill/instance.hpp"
#include "rill/reduce.hpp"

namespace rill {

template <class Op>
concept bulk_reduction_op = std::is_trivially_copyable_v<typename Op::lhs> &&
    std::is_trivially_copyable_v<typename Op::rhs> &&
    requires(typename Op::lhs& l, typename Op::rhs& r, typename Op::rhs v) {
  { Op::identity } -> std::convertible_to<typename Op::rhs>;
  Op::template apply<true>(l, v);
  Op::template apply<false>(l, v);
  Op::template fold<true>(r, v);
  Op::template fold<false>(r, v);
};

namespace detail {
// A row of right-hand sides applied to (ToLhs) or folded into a row of the destination.
template <class Op, bool Exclusive, bool ToLhs>
void reduce_row(std::byte* to, std::ptrdiff_t to_step, const std::byte* from, std::ptrdiff_t from_step,
                std::size_t count) {
  using target = std::conditional_t<ToLhs, typename Op::lhs, typename Op::rhs>;
  for (std::size_t i = 0; i < count; ++i, to += to_step, from += from_step) {
    typename Op::rhs v;
    std::memcpy(&v, from, sizeof v);
    if constexpr (ToLhs)
      Op::template apply<Exclusive>(*reinterpret_cast<target*>(to), v);
    else
      Op::template fold<Exclusive>(*reinterpret_cast<target*>(to), v);
  }
}

template <class Op, bool ToLhs>
row_combiner combiner_of(bool exclusive) {
  return {exclusive ? &reduce_row<Op, true, ToLhs> : &reduce_row<Op, false, ToLhs>, sizeof(typename Op::rhs),
          ToLhs ? sizeof(typename Op::lhs) : sizeof(typename Op::rhs)};
}
}  // namespace detail

// One reduction logged by a list instance.
template <bulk_reduction_op Op, int N>
struct list_entry {
  point<N> at;
  typename Op::rhs value;
};

namespace detail {
// Applies `count` list entries to the destination's field, or (check_only) returns the index of
// the first entry whose point is outside the destination's bounds (count when none is).
using entries_fn = std::size_t (*)(const field_address& dst, const std::byte* entries, std::size_t count,
                                   bool check_only);
event replay_padded(instance list, field_id list_f, std::size_t entry_bytes, instance dst, field_id dst_f,
                    std::size_t dst_bytes, int dims, entries_fn fn, event after);

// ToLhs: each entry applied to an element; else folded into a right-hand side (a fold instance).
template <class Op, int N, bool Exclusive, bool ToLhs>
std::size_t replay_entries(const field_address& dst, const std::byte* entries, std::size_t count, bool check_only) {
  for (std::size_t i = 0; i < count; ++i) {
    list_entry<Op, N> e;
    std::memcpy(static_cast<void*>(&e), entries + i * sizeof e, sizeof e);
    point<3> q{0, 0, 0};
    for (int d = 0; d < N; ++d) q[d] = e.at[d];
    if (check_only) {
      if (!dst.bounds.contains(q)) return i;
      continue;
    }
    std::byte* at = dst.at_lo;
    for (int d = 0; d < 3; ++d) at += (q[d] - dst.bounds.lo[d]) * dst.strides[static_cast<std::size_t>(d)];
    if constexpr (ToLhs)
      Op::template apply<Exclusive>(*reinterpret_cast<typename Op::lhs*>(at), e.value);
    else
      Op::template fold<Exclusive>(*reinterpret_cast<typename Op::rhs*>(at), e.value);
  }
  return count;
}

// A replay whose entries are applied to lhs elements (ToLhs) or folded into rhs ones, as
// combiner_of picks the row function of a fold instance's reduction.
template <class Op, int N, bool ToLhs>
event replay_as(instance list, field_id list_f, instance dst, field_id dst_f, event after, bool exclusive) {
  using target = std::conditional_t<ToLhs, typename Op::lhs, typename Op::rhs>;
  return replay_padded(list, list_f, sizeof(list_entry<Op, N>), dst, dst_f, sizeof(target), N,
                       exclusive ? &replay_entries<Op, N, true, ToLhs> : &replay_entries<Op, N, false, ToLhs>, after);
}
}  // namespace detail

// A list instance: a log of up to `capacity` reductions (a point and an Op::rhs each) on one
// rank, for sparse reductions -- replaying it moves and applies only what was reduced, where a
// fold instance moves a value for every point. Its field f holds list_entry<Op, N> values:
// element 0 holds the log's length, elements 1 .. capacity the entries.
template <bulk_reduction_op Op, int N>
created_instance create_list_instance(memory m, std::size_t capacity, field_id f, event after = event::none()) {
  const created_instance made = instance::create(m, rect<1>{0, static_cast<coord_t>(capacity)},
                                                 field_space{}.add(f, sizeof(list_entry<Op, N>)), layout::soa(), after);
  return {made.inst, fill(made.inst, field<list_entry<Op, N>>{f}, list_entry<Op, N>{}, rect<1>{0, 0}, made.ready)};
}

// Logs reductions into a list instance, on its rank: an atomic increment of the length and a
// store. A log that is full throws rill::misuse_error (the reduction would be lost).
template <bulk_reduction_op Op, int N>
class list_reducer {
 public:
  list_reducer(instance list, field_id f) : log_(list, f) {}
  void operator()(const point<N>& p, typename Op::rhs v) const {
    const auto i = std::atomic_ref<coord_t>(log_[{0}].at.x[0]).fetch_add(1, std::memory_order_relaxed) + 1;
    if (i > log_.bounds().hi[0]) full();
    log_[{i}] = list_entry<Op, N>{p, v};
  }

 private:
  [[noreturn]] void full() const {
    throw misuse_error("rill::list_reducer: the list instance is full (" + std::to_string(log_.bounds().hi[0]) +
                       " entries): make it larger, or replay it and start a new one");
  }
  accessor<list_entry<Op, N>, 1> log_;
};

// Once `after` has triggered, applies every reduction logged in the list instance `list` (field
// list_f) to field dst_f (Op::lhs) of dst, an instance of N dimensions: for each entry,
// dst[at] = apply(dst[at], value), at dst's rank. Every entry's point is checked against dst's
// bounds before any is applied.
template <bulk_reduction_op Op, int N>
event replay_into(instance list, field_id list_f, instance dst, field_id dst_f, event after = event::none(),
                  bool exclusive = false) {
  return detail::replay_as<Op, N, true>(list, list_f, dst, dst_f, after, exclusive);
}

// The same into a reduction instance (field dst_f holds Op::rhs, as a fold instance's does): for
// each entry, dst[at] = fold(dst[at], value). A list folded into a fold instance that is then
// reduced (hierarchical reductions) gives what replaying it into the destination would.
template <bulk_reduction_op Op, int N>
event replay_fold_into(instance list, field_id list_f, instance dst, field_id dst_f, event after = event::none(),
                       bool exclusive = false) {
  return detail::replay_as<Op, N, false>(list, list_f, dst, dst_f, after, exclusive);
}

// A fold instance: field f holds an Op::rhs per point of `space`, each the identity once the
// returned event has triggered.
template <bulk_reduction_op Op, int N>
created_instance create_fold_instance(memory m, const index_space<N>& space, field_id f, event after = event::none()) {
  const created_instance made =
      instance::create(m, space, field_space{}.add(f, sizeof(typename Op::rhs)), layout::soa(), after);
  return {made.inst, fill(made.inst, field<typename Op::rhs>{f}, typename Op::rhs(Op::identity), made.ready)};
}
template <bulk_reduction_op Op, int N>
created_instance create_fold_instance(memory m, const rect<N>& space, field_id f, event after = event::none()) {
  return create_fold_instance<Op>(m, index_space<N>(space), f, after);
}

// Folds values into field f of a fold instance, on the instance's rank: no lock; atomic unless
// Exclusive (the caller's promise that no other thread reduces into the instance meanwhile).
template <bulk_reduction_op Op, int N, bool Exclusive = false>
class reducer {
 public:
  reducer(instance inst, field_id f) : values_(inst, f) {}
  void operator()(const point<N>& p, typename Op::rhs v) const { Op::template fold<Exclusive>(values_[p], v); }

 private:
  accessor<typename Op::rhs, N> values_;
};

// Once `after` has triggered, applies every value of field src_f of src (Op::rhs, typically a fold
// instance) to the element of field dst_f of dst (Op::lhs) at the same point: dst[p] =
// apply(dst[p], src[p]) over src's index space (or `over`), as a sweep at dst's rank (or straight
// from src's rank where it can address dst's storage, as copies do). `exclusive`: no other
// reduction touches those elements meanwhile (plain updates instead of atomic ones).
template <bulk_reduction_op Op>
event reduce_into(instance src, field_id src_f, instance dst, field_id dst_f, event after = event::none(),
                  bool exclusive = false) {
  return detail::transfer_padded(src, {src_f}, dst, {dst_f}, nullptr, 0, detail::combiner_of<Op, true>(exclusive),
                                 after, "rill::reduce");
}
template <bulk_reduction_op Op, int N>
event reduce_into(instance src, field_id src_f, instance dst, field_id dst_f, const index_space<N>& over,
                  event after = event::none(), bool exclusive = false) {
  const index_space<3> padded = padded_to_3d(over);
  return detail::transfer_padded(src, {src_f}, dst, {dst_f}, &padded, N, detail::combiner_of<Op, true>(exclusive),
                                 after, "rill::reduce");
}

// The same, folding into another reduction instance (field dst_f holds Op::rhs): dst[p] =
// fold(dst[p], src[p]). Hierarchical reductions fold per-worker or per-node instances together.
template <bulk_reduction_op Op>
event fold_into(instance src, field_id src_f, instance dst, field_id dst_f, event after = event::none(),
                bool exclusive = false) {
  return detail::transfer_padded(src, {src_f}, dst, {dst_f}, nullptr, 0, detail::combiner_of<Op, false>(exclusive),
                                 after, "rill::reduce");
}

}  // namespace rill
