#include "data/storage_cache.hpp"

#include "data/instance_layout.hpp"

#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define RILL_KEPT_POISONED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RILL_KEPT_POISONED 1
#endif
#endif
#if defined(RILL_KEPT_POISONED)
#include <sanitizer/asan_interface.h>
#define RILL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define RILL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define RILL_POISON(p, n) ((void)(p), (void)(n))
#define RILL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace rill::detail {
namespace {

// Blocks smaller than this go back to the allocator, which reuses them without faulting anyway.
constexpr std::size_t smallest_kept = std::size_t{64} << 10;

// Storage of a page or more starts on a page: direct I/O (--rill:io-direct) moves file blocks
// straight into it only at the file system's memory alignment (512 bytes or a page).
std::align_val_t alignment_of(std::size_t bytes) {
  constexpr std::size_t page = 4096;
  return std::align_val_t{bytes >= page ? page : instance_alignment};
}

}  // namespace

storage_cache::~storage_cache() { trim(0); }

storage_cache::block storage_cache::take(std::size_t bytes, std::size_t room) {
  block hit;
  std::vector<block> freed;
  {
    std::lock_guard g(lock_);
    if (auto it = blocks_.lower_bound(bytes); it != blocks_.end() && it->first - bytes <= bytes / 8) {
      hit = {it->second, it->first};
      kept_ -= hit.bytes;
      blocks_.erase(it);
    }
    take_out_beyond(room, freed);
  }
  for (const block& b : freed) free_block(b);
  if (hit.at) {
    // The slack past `bytes` stays poisoned: an overrun of the instance is still caught.
    RILL_UNPOISON(hit.at, bytes);
    return hit;
  }
  return {static_cast<std::byte*>(::operator new(bytes, alignment_of(bytes), std::nothrow)), bytes};
}

void storage_cache::give(block b) {
  if (!b.at) return;
  if (b.bytes >= smallest_kept) {
    std::lock_guard g(lock_);
    if (kept_ + b.bytes <= keep_) {
      try {
        blocks_.emplace(b.bytes, b.at);
      } catch (const std::bad_alloc&) {  // (no room for the map's node: the block goes back instead)
        free_block(b);
        return;
      }
      RILL_POISON(b.at, b.bytes);
      kept_ += b.bytes;
      return;
    }
  }
  free_block(b);
}

void storage_cache::trim(std::size_t most) {
  std::vector<block> freed;
  {
    std::lock_guard g(lock_);
    take_out_beyond(most, freed);
  }
  for (const block& b : freed) free_block(b);
}

void storage_cache::take_out_beyond(std::size_t most, std::vector<block>& out) {
  while (kept_ > most) {
    const auto largest = std::prev(blocks_.end());
    out.push_back({largest->second, largest->first});
    kept_ -= largest->first;
    blocks_.erase(largest);
  }
}

std::size_t storage_cache::kept() const {
  std::lock_guard g(lock_);
  return kept_;
}

void storage_cache::free_block(block b) { ::operator delete(b.at, alignment_of(b.bytes)); }

}  // namespace rill::detail
