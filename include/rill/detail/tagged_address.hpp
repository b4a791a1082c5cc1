// Generation tags of global memory (rill/global_ptr.hpp). Every allocation in a segment gets an
// 8-bit tag, written for each of its 16-byte granules into the segment's tag table and kept in
// the global pointers made for it; freeing the allocation clears the granules' tags. An access
// whose pointer's tag differs from the granules' uses memory that was freed (and perhaps
// allocated again): an error where the memory is checked, never a silent stray write. Tag 0 is
// "untagged": a global pointer made from a plain address is checked against its segment's bounds
// only.
//
// Inside the runtime, an address travels with its tag as one word: the owner's address in bits
// 0-55 (user-space addresses need at most 48) and the tag in bits 56-63.
#pragma once

#include <cstdint>

namespace rill::detail {

inline constexpr unsigned tag_shift = 56;

constexpr std::uintptr_t with_tag(std::uintptr_t address, std::uint8_t tag) {
  return address | (static_cast<std::uintptr_t>(tag) << tag_shift);
}
constexpr std::uintptr_t untagged(std::uintptr_t tagged) { return tagged & ((std::uintptr_t{1} << tag_shift) - 1); }
constexpr std::uint8_t tag_of(std::uintptr_t tagged) { return static_cast<std::uint8_t>(tagged >> tag_shift); }

// Hands out the tags 1 to 255 in turn: memory freed and allocated again gets another tag unless
// a multiple of 255 allocations came in between.
class tag_sequence {
 public:
  std::uint8_t next() {
    last_ = static_cast<std::uint8_t>(last_ == 255 ? 1 : last_ + 1);
    return last_;
  }

 private:
  std::uint8_t last_ = 0;
};

}  // namespace rill::detail
