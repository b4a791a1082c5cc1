// Where each field of an instance lies: a layout (rill/layout.hpp) applied to an instance's
// bounding rect and field space.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rill/field_space.hpp"
#include "rill/index_space.hpp"
#include "rill/layout.hpp"

namespace rill::detail {

struct field_placement {
  field_id id = 0;
  std::size_t bytes = 0;
  std::size_t offset = 0;                   // of the bounding rect's lo point, from the instance's start
  std::array<std::ptrdiff_t, 3> strides{};  // bytes between neighbours in each dimension
  std::intptr_t opaque = 0;                 // the field's serialization (rill/opaque.hpp), or 0

  template <class Archive>
  void serialize(Archive& ar) {
    std::uint64_t b = bytes, o = offset;  // the same width on every rank
    std::array<std::int64_t, 3> s{strides[0], strides[1], strides[2]};
    std::int64_t q = opaque;
    ar(id, b, o, s, q);
    opaque = static_cast<std::intptr_t>(q);
    bytes = static_cast<std::size_t>(b);
    offset = static_cast<std::size_t>(o);
    for (std::size_t d = 0; d < 3; ++d) strides[d] = static_cast<std::ptrdiff_t>(s[d]);
  }
};

struct instance_layout {
  std::vector<field_placement> fields;  // ascending by id
  std::size_t bytes = 0;                // the whole instance
  const field_placement* find(field_id id) const;
  bool has_opaque() const;
};

// Arrays of groups start on cache lines (so an instance's start must be aligned to this).
inline constexpr std::size_t instance_alignment = 64;

// Throws rill::misuse_error for a layout that does not fit the fields and dimensions (a group
// naming a field that is not there or one named twice, an order that is not a permutation of the
// dimensions) or an instance whose bytes overflow a size_t.
instance_layout lay_out(int dims, const rect<3>& bounds, const field_space& fields, const layout& l);

}  // namespace rill::detail
