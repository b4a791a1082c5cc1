// A rank's registered segment as one process sees it: where it lies in its owner's address space
// and here, and the checks every access through a global pointer passes (bounds, alignment, the
// generation tags of rill/detail/tagged_address.hpp). The owner's side -- allocation, tagging --
// is src/global/segment.hpp; this half is a public detail header so that one-sided operations on
// memory the calling rank maps check and translate inline (rill/detail/address_map.hpp).
//
// Global pointers hold addresses in the owner's address space. Another process that maps the
// segment sees it at another address: a segment_view translates. The tag table lives in the
// segment's memory (rill/detail/segment_layout.hpp), so that every process mapping it sees the
// same tags; its per-page summary lets a check inside a large allocation skip the per-granule table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill/detail/segment_layout.hpp"
#include "rill/detail/tagged_address.hpp"

namespace rill::detail {

// What is wrong with an access to a range of a segment.
enum class range_fault : std::uint8_t {
  none,
  outside,     // not in the segment's heaps
  misaligned,  // not aligned as the access needs
  freed,       // its first granule is not tagged as the pointer is: freed, or moved out of its allocation
  past_end,    // it starts in the pointer's allocation and runs past its end
};

class segment_view {
 public:
  segment_view() = default;
  segment_view(std::uintptr_t owner_base, std::byte* local_base, std::size_t bytes)
      : owner_(owner_base), local_(local_base), size_(bytes) {}

  bool mapped() const { return local_ != nullptr; }
  std::uintptr_t owner_base() const { return owner_; }
  std::byte* local_base() const { return local_; }
  std::size_t size() const { return size_; }
  // What is wrong with accessing [addr, addr + bytes), aligned to `align` (a power of two),
  // through a pointer whose tagged address (owner addresses) is `tagged`. An untagged pointer is
  // checked against the bounds only.
  [[gnu::always_inline]] range_fault check(std::uintptr_t tagged, std::size_t bytes, std::size_t align) const {
    if (const range_fault f = check_bounds(tagged, bytes, align); f != range_fault::none) return f;
    const std::uintptr_t addr = untagged(tagged);
    const std::uint8_t tag = tag_of(tagged);
    if (tag == 0) return range_fault::none;
    const std::size_t g = granule_of(addr);
    if (summary()[g / segment_layout::summary_page] != tag && tags()[g] != tag) return range_fault::freed;
    const std::size_t last = granule_of(addr + (bytes == 0 ? 0 : bytes - 1));
    return last == g || tagged_as(g + 1, last, tag) ? range_fault::none : range_fault::past_end;
  }
  // The same without the tags: outside, misaligned or none.
  range_fault check_bounds(std::uintptr_t tagged, std::size_t bytes, std::size_t align) const {
    const std::uintptr_t addr = untagged(tagged);
    const std::uintptr_t first = owner_ + segment_layout::heap_start(size_);
    if (addr < first || bytes > size_ || addr - owner_ > size_ - bytes) return range_fault::outside;
    return (addr & (align - 1)) != 0 ? range_fault::misaligned : range_fault::none;
  }
  // The tag of the granule holding owner address `addr` (in the segment).
  std::uint8_t tag_at(std::uintptr_t addr) const { return tags()[granule_of(addr)]; }
  // The index in the tag table of the granule holding owner address `addr` (in the segment).
  std::size_t granule_of(std::uintptr_t addr) const {
    return addr / segment_layout::granule - owner_ / segment_layout::granule;
  }
  // Where an owner address (tagged or not) is in this process.
  void* translate(std::uintptr_t tagged) const { return local_ + (untagged(tagged) - owner_); }

 private:
  const std::uint8_t* tags() const {
    return reinterpret_cast<const std::uint8_t*>(local_ + segment_layout::lock_bytes);
  }
  const std::uint8_t* summary() const { return tags() + segment_layout::tag_bytes(size_); }
  // Whether granules [first, last] all carry `tag` (src/global/segment.cpp).
  bool tagged_as(std::size_t first, std::size_t last, std::uint8_t tag) const;

  std::uintptr_t owner_ = 0;
  std::byte* local_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rill::detail
