// A rank's registered segment: the memory that global pointers (rill/global_ptr.hpp) name. One
// contiguous range per rank, provided at start-up by the transport (reserved address space whose
// pages the OS commits as they are touched; under MPI, a shared-memory window where the node's
// processes can map each other's), laid out as src/common/segment_layout.hpp says, with
// Boost.Interprocess's best-fit allocator over its own heap. Every access is checked against the
// segment's bounds and the generation tags of the memory it touches (rill/detail/tagged_address.hpp),
// so a bad or stale global pointer is an error, never a stray write.
//
// Global pointers hold addresses in the owner's address space. Another process that maps the
// segment sees it at another address: a segment_view translates. The locks that serialise
// delegates and the tag table live in the segment's memory, so that every process mapping it uses
// the same ones.
#pragma once

#include <boost/interprocess/managed_external_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/segment_layout.hpp"
#include "common/spinlock.hpp"
#include "rill/detail/tagged_address.hpp"

namespace rill::detail {

// The head of every segment's memory: delegate locks, striped over 8-byte words.
struct segment_header {
  struct alignas(64) padded_lock {
    spinlock lock;
  };
  padded_lock stripes[segment_layout::lock_stripes];
};
static_assert(sizeof(segment_header) == segment_layout::lock_bytes);

// What is wrong with an access to a range of a segment.
enum class range_fault : std::uint8_t {
  none,
  outside,     // not in the segment's heaps
  misaligned,  // not aligned as the access needs
  freed,       // its first granule is not tagged as the pointer is: freed, or moved out of its allocation
  past_end,    // it starts in the pointer's allocation and runs past its end
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
  // What is wrong with accessing [addr, addr + bytes), aligned to `align` (a power of two),
  // through a pointer whose tagged address (owner addresses) is `tagged`. An untagged pointer is
  // checked against the bounds only.
  range_fault check(std::uintptr_t tagged, std::size_t bytes, std::size_t align) const {
    if (const range_fault f = check_bounds(tagged, bytes, align); f != range_fault::none) return f;
    const std::uintptr_t addr = untagged(tagged);
    const std::uint8_t tag = tag_of(tagged);
    if (tag == 0) return range_fault::none;
    const std::size_t g = granule_of(addr);
    if (tags()[g] != tag) return range_fault::freed;
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
  // The lock that serialises delegate operations on the word at `addr` (owner address).
  spinlock& stripe(std::uintptr_t tagged) const {
    auto* h = reinterpret_cast<segment_header*>(local_);
    return h->stripes[(untagged(tagged) >> 3) % std::size(h->stripes)].lock;
  }

 private:
  const std::uint8_t* tags() const {
    return reinterpret_cast<const std::uint8_t*>(local_ + segment_layout::lock_bytes);
  }
  // Whether granules [first, last] all carry `tag`.
  bool tagged_as(std::size_t first, std::size_t last, std::uint8_t tag) const;

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

  struct allocation {
    void* at;  // nullptr when the heap has no room
    std::uint8_t tag;
  };
  // From this rank's own heap (align: a power of two), in whole granules, tagged with a new
  // generation.
  allocation allocate(std::size_t bytes, std::size_t align);
  // Frees what allocate returned and clears its tags; false (and nothing freed) when `p` is not a
  // live allocation -- freed already, or not the start of one, which the allocator itself would
  // not survive -- or `tag` (unless 0) is not its generation: freed, and its place allocated again.
  bool deallocate(void* p, std::uint8_t tag = 0);
  // Tags the granules of [addr, addr + bytes), owner addresses in the segment (the global heap's
  // arrays, whose tags rank 0 hands out).
  void set_tags(std::uintptr_t addr, std::size_t bytes, std::uint8_t tag);
  segment_view view() const { return {reinterpret_cast<std::uintptr_t>(base_), base_, size_}; }
  std::size_t size() const { return size_; }

 private:
  std::byte* base_;
  std::size_t size_;
  // Boost's external-buffer heap has no lock of its own (null_mutex_family): lock_ serialises it,
  // since a rank's workers allocate at once (AGAS blocks arrive in handlers on any of them).
  std::mutex lock_;
  boost::interprocess::managed_external_buffer heap_;
  struct live_allocation {
    std::size_t bytes;
    std::uint8_t tag;
  };
  std::unordered_map<void*, live_allocation> live_;
  tag_sequence tags_;
};

// The plain address, in this process, of [addr, addr + bytes) of `rank`'s segment seen through
// `s`, for a pointer whose tagged address is `tagged`; rill::misuse_error naming `what` and the
// fault (segment_view::check) otherwise.
void* checked_address(const segment_view& s, int rank, std::uintptr_t tagged, std::size_t bytes, std::size_t align,
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
