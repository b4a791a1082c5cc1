// What the calling thread's rank knows of every rank's memory: the inline hot path of one-sided
// operations on memory it maps (rill/detail/at_home.hpp) and of global_array indexing.
//
// The global layer builds one map per rank at start-up. A thread serves one rank for its life
// (src/scheduler/current_module.hpp), so the first lookup on a thread goes through its worker and
// every later one is a thread-local load: no call and no store on the path of an update, which
// matters more than its instruction count. An atomic on memory that misses the cache is where a
// GUPS-like loop waits, and the stores of a call in front of each one (its return address, its
// out-parameters) keep the next update from starting while the last one is in flight.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rill/detail/segment_view.hpp"

namespace rill::detail {

class gas_index;

struct address_map {
  int ranks = 0;
  int me = 0;             // the rank whose map this is
  bool every_tag = true;  // --rill:tag-checks=every: check the tags on every access, not only bounds
  // By rank: its segment if this rank addresses it directly (its own; with --rill:shared-segments,
  // the other ranks' this process maps), else an unmapped view.
  const segment_view* addressable = nullptr;
  // By rank: where its part of the global heap starts, in its address space.
  const std::uintptr_t* global_heap_bases = nullptr;
  // By rank: the index of AGAS blocks in its segment, empty where this rank does not address it
  // (rill/detail/gas_index.hpp).
  const gas_index* gas_indexes = nullptr;
  // ranks_reciprocal(ranks): block_home's multiplier.
  std::uint64_t ranks_inverse = 0;

  // Lemire's fastmod (Lemire, Kaser, Kurz 2019): n % d for 32-bit n and d as two multiplications,
  // with inverse = 2^64 / d rounded up. A cyclic allocation's home is block % ranks on every
  // operation's path, and a 32-bit division there costs 25+ cycles of the chain that leads to the
  // element's address.
  static constexpr std::uint64_t ranks_reciprocal(int d) {
    return ~std::uint64_t{0} / static_cast<std::uint32_t>(d) + 1;
  }
  [[gnu::always_inline]] int block_home(std::uint32_t block) const {
    const std::uint64_t low = ranks_inverse * block;
    return static_cast<int>((static_cast<unsigned __int128>(low) * static_cast<std::uint32_t>(ranks)) >> 64);
  }

  // The element [tagged, +bytes) of `rank`'s segment as a plain pointer here, if this rank
  // addresses that segment and the range passes its checks; nullptr otherwise (the caller's slow
  // path then tells a bad range from a segment it does not map, and names the fault).
  [[gnu::always_inline]] void* target(int rank, std::uintptr_t tagged, std::size_t bytes, std::size_t align) const {
    if (static_cast<unsigned>(rank) >= static_cast<unsigned>(ranks)) return nullptr;
    const segment_view& s = addressable[rank];
    if (!s.mapped()) return nullptr;
    const range_fault f = every_tag ? s.check(tagged, bytes, align) : s.check_bounds(tagged, bytes, align);
    return f == range_fault::none ? s.translate(tagged) : nullptr;
  }
};

// The calling thread's rank's map once the thread has asked for it (src/global/global_api.cpp).
inline constinit thread_local const address_map* tls_address_map = nullptr;
// Looks the map up through the calling worker and remembers it for the thread; throws
// rill::misuse_error naming `what` when the thread is not a Rill worker.
const address_map& find_address_map(const char* what);

inline const address_map& address_map_here(const char* what) {
  if (const address_map* m = tls_address_map) [[likely]]
    return *m;
  return find_address_map(what);
}

}  // namespace rill::detail
