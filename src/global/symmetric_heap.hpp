// The allocator of the global heap (rill/global_array.hpp): ranges of offsets that are taken in
// every rank's part of the heap at once, so that an array's parts all start at the same offset
// and any rank computes an element's address from its index. One instance, on rank 0, as HPX-5
// has its cyclic heap managed by the root locality.
//
// The bookkeeping lives here, not in the heap's memory: rank 0's part stays as untouched (hence
// uncommitted and zero) as the others', and a freed range is zeroed by its owners before it
// returns to the free list.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "rill/detail/tagged_address.hpp"

namespace rill::detail {

class symmetric_heap {
 public:
  explicit symmetric_heap(std::uint64_t bytes);

  struct placed {
    std::uint64_t offset;
    std::uint8_t tag;  // its generation (rill/detail/tagged_address.hpp)
  };
  // The offset of `bytes` bytes aligned to `align` (a power of two) and a new generation tag, or
  // nothing when no free range is large enough. Sizes are rounded up to cache lines.
  std::optional<placed> allocate(std::uint64_t bytes, std::uint64_t align);
  // Takes a live allocation out of use and returns its size, or nothing when `offset` does not
  // start one of generation `tag` (never allocated, retired already, or allocated again since).
  // Its range is not reusable until recycle().
  std::optional<std::uint64_t> retire(std::uint64_t offset, std::uint8_t tag);
  // Returns a retired range (zeroed by then) to the free list.
  void recycle(std::uint64_t offset, std::uint64_t bytes);

  std::uint64_t size() const { return bytes_; }
  std::uint64_t free_bytes() const;

 private:
  std::uint64_t bytes_;
  mutable std::mutex m_;
  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> length; neighbours are merged
  struct live_range {
    std::uint64_t length;
    std::uint8_t tag;
  };
  std::map<std::uint64_t, live_range> live_;  // by offset
  tag_sequence tags_;
};

}  // namespace rill::detail
