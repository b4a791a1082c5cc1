// The elements of opaque fields (rill/opaque.hpp): pointers to objects an instance owns, moved by
// serializing the source's objects and deserializing new ones at the destination. What copies
// (transfer.cpp, external_transfer.cpp) and instances (data_module.cpp) do with them.
//
// A serialized element is its size as 8 bytes, then that many bytes; a null element is the size
// null_element and nothing else.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "data/instance_layout.hpp"
#include "rill/opaque.hpp"

namespace rill::detail {

struct instance_record;
struct storage;

inline constexpr std::uint64_t null_element = std::numeric_limits<std::uint64_t>::max();

// The serialization of an opaque field (f.opaque != 0).
opaque_entry entry_of(const field_placement& f);

// Replaces the object at `to` by a new one made from `object` (serialized and deserialized in
// this process), or by null; destroys the one replaced. Returns the serialized bytes.
std::size_t deep_copy(opaque_entry e, std::byte* to, const std::byte* from);
// The same for a row of `count` elements.
std::size_t deep_copy_row(opaque_entry e, std::byte* to, std::ptrdiff_t to_step, const std::byte* from,
                          std::ptrdiff_t from_step, std::size_t count);

// The bytes a row's elements take serialized.
std::size_t serialized_size(opaque_entry e, const std::byte* from, std::ptrdiff_t step, std::size_t count);
// Appends a row's elements, serialized, to `out`.
void serialize_row(opaque_entry e, const std::byte* from, std::ptrdiff_t step, std::size_t count,
                   std::vector<std::byte>& out);
// Makes `count` new objects from serialized bytes starting at `in` (and not past `end`) into a
// row, destroying those replaced; returns where the next element's bytes start. Throws
// rill::misuse_error for bytes that end early or that deserialize fails on.
const std::byte* deserialize_row(opaque_entry e, std::byte* to, std::ptrdiff_t step, std::size_t count,
                                 const std::byte* in, const std::byte* end);

// A dense row of `count` object pointers, null at first, outside any instance: objects on their
// way between a resource and a copy. With an entry, it owns them (destroyed with the row, unless
// handed over); without, they are lent.
class object_row {
 public:
  object_row(opaque_entry owner, std::size_t count) : owner_(owner), bytes_(count * sizeof(void*)) {}
  object_row(const object_row&) = delete;
  object_row& operator=(const object_row&) = delete;
  ~object_row();
  std::byte* bytes() { return bytes_.data(); }
  void hand_over() { owner_ = nullptr; }

 private:
  opaque_entry owner_;
  std::vector<std::byte> bytes_;
};

// Destroys one object (nothing for null).
void destroy_object(opaque_entry e, void* object);
// Destroys the objects of every opaque field of an instance in memory.
void destroy_objects(const instance_record& rec);

}  // namespace rill::detail
