// A rank's registered segment: the memory that global pointers (rill/global_ptr.hpp) name. One
// contiguous reservation per rank, made at start-up (pages are committed by the OS as they are
// touched), with Boost.Interprocess's best-fit allocator over it. Remote accesses are checked
// against its bounds at the home, so a bad global pointer is an error, never a stray write.
#pragma once

#include <array>
#include <boost/interprocess/managed_external_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/spinlock.hpp"

namespace rill::detail {

class segment {
 public:
  explicit segment(std::size_t bytes);
  ~segment();
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;

  // nullptr when the segment has no room (align: a power of two).
  void* allocate(std::size_t bytes, std::size_t align);
  void deallocate(void* p);
  // Whether [addr, addr + bytes) lies inside the segment.
  bool contains(std::uintptr_t addr, std::size_t bytes) const {
    const auto b = reinterpret_cast<std::uintptr_t>(base_);
    return addr >= b && bytes <= size_ && addr - b <= size_ - bytes;
  }
  std::size_t size() const { return size_; }
  // The lock that serialises delegate operations on the 8-byte word at `addr`: a fixed table of
  // stripes, so that words share locks but a word always gets the same one.
  spinlock& stripe(std::uintptr_t addr) { return stripes_[(addr >> 3) % stripes_.size()].lock; }

 private:
  struct alignas(64) padded_lock {
    spinlock lock;
  };
  std::array<padded_lock, 256> stripes_;
  void* base_;
  std::size_t size_;
  boost::interprocess::managed_external_buffer heap_;  // its bookkeeping is thread-safe
};

// The segments of the ranks that live in this process, by rank (null for ranks elsewhere): on
// the local transport every rank's memory is a load or store away. Shared by this process' ranks.
struct segment_directory {
  std::vector<segment*> by_rank;
  segment* find(int rank) const {
    return rank >= 0 && static_cast<std::size_t>(rank) < by_rank.size() ? by_rank[static_cast<std::size_t>(rank)]
                                                                        : nullptr;
  }
};

}  // namespace rill::detail
