// Counters of a rank's part of the active global address space (rill::gas::stats, rill/gas.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rill {

struct gas_stats {
  std::uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;  // the translation cache
  std::size_t cache_entries = 0;
  std::uint64_t forwarded = 0;  // operations this rank sent on because the block was not here
  // Operations this rank ran on a block another rank holds, pinned through that rank's segment,
  // which this rank maps (the local transport; MPI ranks of a node with --rill:shared-segments).
  std::uint64_t on_the_spot = 0;
  std::uint64_t parked = 0;  // operations that waited for a block to finish leaving
  std::uint64_t moved_in = 0, moved_out = 0;
  std::size_t blocks_held = 0;
};

}  // namespace rill
