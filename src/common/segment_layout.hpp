// How a rank's registered segment (src/global/segment.hpp) is laid out, from its start:
//
//   delegate locks | generation tags: a byte per 16-byte granule | own heap | global heap
//
// The global heap is the last --rill:global-heap bytes. Here, below the global layer, because the
// options check that a segment has room for all of it.
#pragma once

#include <cstddef>

namespace rill::detail::segment_layout {

inline constexpr std::size_t lock_stripes = 256, lock_bytes = lock_stripes * 64;
// Granules are aligned in the address space (a segment's start need not be): granule g of a
// segment starting at `base` is the one at address (base / granule + g) * granule.
inline constexpr std::size_t granule = 16;
// The tag table covers the whole segment, so that a granule's tag is found by its address alone.
constexpr std::size_t tag_bytes(std::size_t segment) { return (segment / granule + 1 + 63) / 64 * 64; }
// Where the own heap starts.
constexpr std::size_t heap_start(std::size_t segment) { return lock_bytes + tag_bytes(segment); }
// The bytes of the own heap (new_array's, and registered memory's instances).
constexpr std::size_t own_heap_bytes(std::size_t segment, std::size_t global_heap) {
  return segment - heap_start(segment) - global_heap;
}

}  // namespace rill::detail::segment_layout
