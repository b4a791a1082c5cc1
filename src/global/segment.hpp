// A rank's registered segment: the memory that global pointers (rill/global_ptr.hpp) name. One
// contiguous range per rank, provided at start-up by the transport (reserved address space whose
// pages the OS commits as they are touched; under MPI, a shared-memory window where the node's
// processes can map each other's), laid out as rill/detail/segment_layout.hpp says, with
// Boost.Interprocess's best-fit allocator over its own heap. Every access is checked against the
// segment's bounds and the generation tags of the memory it touches (rill/detail/segment_view.hpp
// checks and translates), so a bad or stale global pointer is an error, never a stray write.
//
// The locks that serialise delegates and the tag table live in the segment's memory, so that every
// process mapping it uses the same ones.
#pragma once

#include <boost/interprocess/managed_external_buffer.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/spinlock.hpp"
#include "rill/detail/segment_layout.hpp"
#include "rill/detail/segment_view.hpp"

namespace rill::detail {

// The head of every segment's memory: delegate locks, striped over 8-byte words.
struct segment_header {
  struct alignas(64) padded_lock {
    spinlock lock;
  };
  padded_lock stripes[segment_layout::lock_stripes];
};
static_assert(sizeof(segment_header) == segment_layout::lock_bytes);

// The lock that serialises delegate operations on the word at owner address `tagged`, in the
// segment header that `s` maps.
inline spinlock& delegate_stripe(const segment_view& s, std::uintptr_t tagged) {
  auto* h = reinterpret_cast<segment_header*>(s.local_base());
  return h->stripes[(untagged(tagged) >> 3) % std::size(h->stripes)].lock;
}

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
  // set_tags with lock_ held: the tags, then the summary of the pages they touch.
  void write_tags(std::uintptr_t addr, std::size_t bytes, std::uint8_t tag);

  std::byte* base_;
  std::size_t size_;
  // Boost's external-buffer heap has no lock of its own (null_mutex_family): lock_ serialises it,
  // since a rank's workers allocate at once (AGAS blocks arrive in handlers on any of them), and
  // the tag writes, whose page summaries two writers must not compute at once.
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

// Every rank's segment as this process sees it, by rank (unmapped for those it cannot address);
// each rank's global module keeps what it needs of it.
struct segment_directory {
  std::vector<segment_view> by_rank;
};

}  // namespace rill::detail
