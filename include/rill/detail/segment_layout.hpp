// How a rank's registered segment (src/global/segment.hpp) is laid out, from its start:
//
//   delegate locks | generation tags: a byte per 16-byte granule | tag summary: a byte per page
//   of 256 granules | AGAS block index | AGAS visit words | own heap | global heap
//
// The global heap is the last --rill:global-heap bytes. A public detail header because the options
// check that a segment has room for all of it, and the inline hot path of one-sided operations
// (rill/detail/segment_view.hpp) finds a granule's tag by it.
#pragma once

#include <cstddef>

namespace rill::detail::segment_layout {

inline constexpr std::size_t lock_stripes = 256, lock_bytes = lock_stripes * 64;
// Granules are aligned in the address space (a segment's start need not be): granule g of a
// segment starting at `base` is the one at address (base / granule + g) * granule.
inline constexpr std::size_t granule = 16;
// The tag table covers the whole segment, so that a granule's tag is found by its address alone.
constexpr std::size_t tag_bytes(std::size_t segment) { return (segment / granule + 1 + 63) / 64 * 64; }
// A page's summary byte is the tag all its granules carry, or 0 when they differ: a check inside a
// large allocation reads this small table (a byte per 4 KiB), which stays in cache, instead of a
// tag per granule, which random accesses miss as often as the data.
inline constexpr std::size_t summary_page = 256;
constexpr std::size_t summary_bytes(std::size_t segment) {
  return ((tag_bytes(segment) + summary_page - 1) / summary_page + 63) / 64 * 64;
}
// The index of the AGAS blocks the rank holds (rill/detail/gas_index.hpp): a 32-byte slot per block,
// a slot per 16 KiB of segment, between 256 and 65,536 (a power of two). A block that finds no
// slot is reached by messages only. After it, the visit words of the rank's threads: a line per
// thread that runs operations on the spot (the first line counts them), 63 at most.
inline constexpr std::size_t gas_slot_bytes = 32, gas_visit_lines = 64;
constexpr std::size_t gas_slots(std::size_t segment) {
  std::size_t n = 256;
  while (n < 65536 && n * 16384 < segment) n *= 2;
  return n;
}
constexpr std::size_t gas_index_offset(std::size_t segment) {
  return lock_bytes + tag_bytes(segment) + summary_bytes(segment);
}
constexpr std::size_t gas_visits_offset(std::size_t segment) {
  return gas_index_offset(segment) + gas_slots(segment) * gas_slot_bytes;
}
// Where the own heap starts.
constexpr std::size_t heap_start(std::size_t segment) { return gas_visits_offset(segment) + gas_visit_lines * 64; }
// The bytes of the own heap (new_array's, and registered memory's instances).
constexpr std::size_t own_heap_bytes(std::size_t segment, std::size_t global_heap) {
  return segment - heap_start(segment) - global_heap;
}

}  // namespace rill::detail::segment_layout
