// A 64-bit mixing function for hashes built from ids and counters: equal inputs give equal
// outputs on every rank, and nearby inputs spread over all bits.
#pragma once

#include <cstdint>

namespace rill::detail {

inline std::uint64_t hash_mix(std::uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace rill::detail
