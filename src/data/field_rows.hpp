// A field of an instance, row by row: the points of a rect along dimension 0 (the order in which
// index spaces list their points), each row a first address, a step and a count. Copies, fills
// and packing for messages all move whole rows.
#pragma once
#include <cstddef>
#include <cstring>

#include "data/data_module.hpp"

namespace rill::detail {

// Where field `f` of point p lies in the instance (p within its bounds).
inline std::byte* field_at(const instance_record& rec, const field_placement& f, const point<3>& p) {
  const rect<3>& b = rec.space.bounds();
  std::ptrdiff_t off = static_cast<std::ptrdiff_t>(f.offset);
  for (int d = 0; d < 3; ++d) off += (p[d] - b.lo[d]) * f.strides[static_cast<std::size_t>(d)];
  return rec.data + off;
}

// f(row's first point) for every row of r, in index-space order.
template <class F>
void for_each_row_start(const rect<3>& r, F&& f) {
  for (coord_t z = r.lo[2]; z <= r.hi[2]; ++z)
    for (coord_t y = r.lo[1]; y <= r.hi[1]; ++y) f(point<3>{r.lo[0], y, z});
}

inline std::size_t row_length(const rect<3>& r) { return static_cast<std::size_t>(r.hi[0] - r.lo[0]) + 1; }

// Copies `count` elements of `bytes` bytes between two rows: one memcpy when both are contiguous.
inline void copy_row(std::byte* to, std::ptrdiff_t to_step, const std::byte* from, std::ptrdiff_t from_step,
                     std::size_t count, std::size_t bytes) {
  const auto dense = static_cast<std::ptrdiff_t>(bytes);
  if (to_step == dense && from_step == dense) {
    std::memcpy(to, from, count * bytes);
    return;
  }
  for (std::size_t i = 0; i < count; ++i, to += to_step, from += from_step) std::memcpy(to, from, bytes);
}

}  // namespace rill::detail
