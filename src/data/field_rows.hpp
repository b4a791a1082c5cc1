// A field of an instance, row by row: the points of a rect along dimension 0 (the order in which
// index spaces list their points), each row a first address, a step and a count. Copies, fills
// and packing for messages all move whole rows.
#pragma once
#include <cstddef>
#include <cstring>

#include "data/data_module.hpp"

namespace rill::detail {

// An instance's storage as a copy sees it: where it starts (in this process) and the bounding
// rect it covers. Another rank's instance, when this rank can address its memory, is one too.
struct storage {
  std::byte* data;
  rect<3> bounds;
};
inline storage storage_of(const instance_record& rec) { return {rec.data, rec.space.bounds()}; }

// Where field `f` of point p lies (p within the bounds).
inline std::byte* field_at(const storage& s, const field_placement& f, const point<3>& p) {
  std::ptrdiff_t off = static_cast<std::ptrdiff_t>(f.offset);
  for (int d = 0; d < 3; ++d) off += (p[d] - s.bounds.lo[d]) * f.strides[static_cast<std::size_t>(d)];
  return s.data + off;
}

// f(row's first point) for every row of r, in index-space order.
template <class F>
void for_each_row_start(const rect<3>& r, F&& f) {
  for (coord_t z = r.lo[2]; z <= r.hi[2]; ++z)
    for (coord_t y = r.lo[1]; y <= r.hi[1]; ++y) f(point<3>{r.lo[0], y, z});
}

inline std::size_t row_length(const rect<3>& r) { return static_cast<std::size_t>(r.hi[0] - r.lo[0]) + 1; }

// Strided elements of B bytes: a fixed-size memcpy the compiler turns into one load and store.
template <std::size_t B>
void copy_strided(std::byte* to, std::ptrdiff_t to_step, const std::byte* from, std::ptrdiff_t from_step,
                  std::size_t count) {
  for (std::size_t i = 0; i < count; ++i, to += to_step, from += from_step) std::memcpy(to, from, B);
}

// Copies `count` elements of `bytes` bytes between two rows: one memcpy when both are contiguous;
// otherwise element by element, with the common sizes known at compile time (a transpose between
// array-of-structs and struct-of-arrays instances is all strided rows).
inline void copy_row(std::byte* to, std::ptrdiff_t to_step, const std::byte* from, std::ptrdiff_t from_step,
                     std::size_t count, std::size_t bytes) {
  const auto dense = static_cast<std::ptrdiff_t>(bytes);
  if (to_step == dense && from_step == dense) {
    std::memcpy(to, from, count * bytes);
    return;
  }
  switch (bytes) {
    case 1: return copy_strided<1>(to, to_step, from, from_step, count);
    case 2: return copy_strided<2>(to, to_step, from, from_step, count);
    case 4: return copy_strided<4>(to, to_step, from, from_step, count);
    case 8: return copy_strided<8>(to, to_step, from, from_step, count);
    case 16: return copy_strided<16>(to, to_step, from, from_step, count);
    default:
      for (std::size_t i = 0; i < count; ++i, to += to_step, from += from_step) std::memcpy(to, from, bytes);
  }
}

// Whether field f of r's points fills one range of memory in index-space order (r's rows follow
// each other with no gap), so that the range can travel as it lies.
inline bool contiguous(const storage& s, const field_placement& f, const rect<3>& r) {
  if (f.strides[0] != static_cast<std::ptrdiff_t>(f.bytes)) return false;
  for (int d = 1; d < 3; ++d) {
    if (r.hi[d] == r.lo[d]) continue;
    for (int e = 0; e < d; ++e) {
      const auto full = s.bounds.hi[e] - s.bounds.lo[e] + 1;
      if (r.lo[e] != s.bounds.lo[e] || r.hi[e] != s.bounds.hi[e] ||
          f.strides[static_cast<std::size_t>(e + 1)] != f.strides[static_cast<std::size_t>(e)] * full)
        return false;
    }
  }
  return true;
}

}  // namespace rill::detail
