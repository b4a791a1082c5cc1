// A rank's registered segment: the memory that global pointers (rill/global_ptr.hpp) name. One
// contiguous range per rank, provided at start-up by the transport (reserved address space whose
// pages the OS commits as they are touched; under MPI, a shared-memory window where the node's
// processes can map each other's), with Boost.Interprocess's best-fit allocator over it. Remote
// accesses are checked against its bounds at the home, so a bad global pointer is an error, never
// a stray write.
//
// Global pointers hold addresses in the owner's address space. Another process that maps the
// segment sees it at another address: a segment_view translates. The segment starts with the
// locks that serialise delegates, so that every process mapping it uses the same ones.
#pragma once

#include <boost/interprocess/managed_external_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "common/spinlock.hpp"

namespace rill::detail {

// The head of every segment's memory: delegate locks, striped over 8-byte words.
struct segment_header {
  struct alignas(64) padded_lock {
    spinlock lock;
  };
  padded_lock stripes[256];
};

// A segment as seen from one process: where it lies in its owner's address space and here.
class segment_view {
 public:
  segment_view() = default;
  segment_view(std::uintptr_t owner_base, std::byte* local_base, std::size_t bytes)
      : owner_(owner_base), local_(local_base), size_(bytes) {}

  bool mapped() const { return local_ != nullptr; }
  std::uintptr_t owner_base() const { return owner_; }
  std::size_t size() const { return size_; }
  // Whether [addr, addr + bytes), in owner addresses, lies in the part of the segment that is
  // allocated from (not the header).
  bool contains(std::uintptr_t addr, std::size_t bytes) const {
    const std::uintptr_t first = owner_ + sizeof(segment_header);
    return addr >= first && bytes <= size_ - sizeof(segment_header) &&
           addr - first <= size_ - sizeof(segment_header) - bytes;
  }
  // Where an owner address is in this process.
  void* translate(std::uintptr_t addr) const { return local_ + (addr - owner_); }
  // The lock that serialises delegate operations on the word at `addr` (owner address).
  spinlock& stripe(std::uintptr_t addr) const {
    auto* h = reinterpret_cast<segment_header*>(local_);
    return h->stripes[(addr >> 3) % std::size(h->stripes)].lock;
  }

 private:
  std::uintptr_t owner_ = 0;
  std::byte* local_ = nullptr;
  std::size_t size_ = 0;
};

// The owner's side of a segment: allocation over memory the transport provides (and frees, after
// this object is gone). Its last `global_heap_bytes` are this rank's part of the global heap
// (rill/global_array.hpp), which rank 0's symmetric_heap hands out; the rest after the header is
// this rank's own heap (rill::new_array).
class segment {
 public:
  segment(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes);
  ~segment();
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;

  // From this rank's own heap; nullptr when it has no room (align: a power of two).
  void* allocate(std::size_t bytes, std::size_t align);
  // Frees what allocate returned; false (and nothing freed) when `p` is not a live allocation --
  // freed already, or not the start of one -- which the allocator itself would not survive.
  bool deallocate(void* p);
  segment_view view() const { return {reinterpret_cast<std::uintptr_t>(base_), base_, size_}; }
  std::size_t size() const { return size_; }

 private:
  std::byte* base_;
  std::size_t size_;
  // Boost's external-buffer heap has no lock of its own (null_mutex_family): lock_ serialises it,
  // since a rank's workers allocate at once (AGAS blocks arrive in handlers on any of them).
  std::mutex lock_;
  boost::interprocess::managed_external_buffer heap_;
  std::unordered_set<void*> live_;
};

// The plain address, in this process, of [addr, addr + bytes) of `rank`'s segment seen through
// `s`; rill::misuse_error naming `what` when the range lies outside it or is not aligned to `align`
// (a power of two).
void* checked_address(const segment_view& s, int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align,
                      const char* what);

// Every rank's segment as this process sees it, by rank (unmapped for those it cannot address).
// Shared by this process' ranks.
struct segment_directory {
  std::vector<segment_view> by_rank;
  const segment_view* find(int rank) const {
    if (rank < 0 || static_cast<std::size_t>(rank) >= by_rank.size()) return nullptr;
    const segment_view& v = by_rank[static_cast<std::size_t>(rank)];
    return v.mapped() ? &v : nullptr;
  }
};

}  // namespace rill::detail
