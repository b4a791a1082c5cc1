// Deferred copies between instances, and fills (Realm §7).
//
//   rill::event moved = rill::copy(src, dst, {voltage, charge}, after);       // every point of src
//   rill::event part = rill::copy(src, dst, {voltage}, rill::rect<2>{{0, 0}, {9, 9}}, after);
//   rill::event zeroed = rill::fill(inst, voltage, 0.0, after);
//
// Source and destination may be in any memories of any ranks and in different layouts (a copy
// between an array-of-structs and a struct-of-arrays instance is a transpose). Each field must be
// in both instances with the same size, and every point copied must be in both instances' index
// spaces; otherwise the returned event is poisoned naming the mismatch and nothing is written. The
// source is read only after `after` has triggered, and the destination is complete when the
// returned event triggers; a poisoned `after` poisons it. Between ranks, the source's rank packs
// the points into pieces of at most 1 MiB that travel as zero-copy messages while it packs the
// next. See docs/data.md.
#pragma once
#include <cstddef>
#include <cstring>
#include <vector>

#include "rill/event.hpp"
#include "rill/instance.hpp"

namespace rill {

namespace detail {
// How the elements a transfer moves meet the destination's: copied (op 0), or combined by
// op(to, to_step, from, from_step, count), a function of the program sent as its code offset (a
// reduction's apply or fold, rill/reduction.hpp), which requires fields of these sizes.
using row_op = void (*)(std::byte* to, std::ptrdiff_t to_step, const std::byte* from, std::ptrdiff_t from_step,
                        std::size_t count);
struct row_combiner {
  row_op op = nullptr;
  std::size_t src_bytes = 0;
  std::size_t dst_bytes = 0;
};
// Moves src_fields[i] of src to dst_fields[i] of dst at the points of `over` (padded to 3
// dimensions, of `dims` dimensions; nullptr: src's whole index space) once `after` has triggered.
// `what` names the operation in errors.
event transfer_padded(instance src, std::vector<field_id> src_fields, instance dst, std::vector<field_id> dst_fields,
                      const index_space<3>* over, int dims, row_combiner how, event after, const char* what);
event fill_padded(instance inst, field_id f, std::vector<std::byte> value, const index_space<3>* over, int dims,
                  event after);

template <class T>
std::vector<std::byte> bytes_of(const T& value) {
  std::vector<std::byte> b(sizeof(T));
  std::memcpy(b.data(), &value, sizeof(T));
  return b;
}
}  // namespace detail

// Copies `fields` of every point of src's index space into dst, once `after` has triggered.
inline event copy(instance src, instance dst, std::vector<field_id> fields, event after = event::none()) {
  return detail::transfer_padded(src, fields, dst, fields, nullptr, 0, {}, after, "rill::copy");
}
// Copies `fields` of the points of `over` only.
template <int N>
event copy(instance src, instance dst, std::vector<field_id> fields, const index_space<N>& over,
           event after = event::none()) {
  const index_space<3> padded = padded_to_3d(over);
  return detail::transfer_padded(src, fields, dst, fields, &padded, N, {}, after, "rill::copy");
}
template <int N>
event copy(instance src, instance dst, std::vector<field_id> fields, const rect<N>& over, event after = event::none()) {
  return copy(src, dst, std::move(fields), index_space<N>(over), after);
}

// Sets field f of every point of the instance to `value`, once `after` has triggered.
template <class T>
event fill(instance inst, field<T> f, const T& value, event after = event::none()) {
  return detail::fill_padded(inst, f.id, detail::bytes_of(value), nullptr, 0, after);
}
// The points of `over` only.
template <class T, int N>
event fill(instance inst, field<T> f, const T& value, const index_space<N>& over, event after = event::none()) {
  const index_space<3> padded = padded_to_3d(over);
  return detail::fill_padded(inst, f.id, detail::bytes_of(value), &padded, N, after);
}
template <class T, int N>
event fill(instance inst, field<T> f, const T& value, const rect<N>& over, event after = event::none()) {
  return fill(inst, f, value, index_space<N>(over), after);
}

}  // namespace rill
