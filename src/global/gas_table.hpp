// One rank's part of the active global address space (rill/gas.hpp, HPX-5 §III): the blocks it
// holds, the directory of the blocks it is home to, its translation cache, and the block numbers
// it hands out. Every decision about an AGAS address on this rank is taken here, under one lock.
//
// A block held here can be pinned (operations on it run) or frozen (it is leaving: moving or being
// freed). Freezing waits for the pins to drain; operations that find a block frozen are parked
// and routed again once it has gone, so none is lost or applied twice. A block is also listed in
// the index in the rank's segment (rill/detail/gas_index.hpp): ranks that map the segment find it there and run
// operations on the spot, in visits that a move or free waits for as it waits for pins.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/spinlock.hpp"
#include "global/gas_visitors.hpp"
#include "global/translation_cache.hpp"
#include "rill/config.hpp"
#include "rill/gaddr.hpp"
#include "rill/gas_stats.hpp"

namespace rill::detail {

// A block this rank holds.
struct gas_block {
  static constexpr std::uint32_t frozen_bit = gas_slot::frozen_bit;
  std::byte* data = nullptr;
  std::uint64_t bytes = 0;  // usable bytes (the last block of an allocation may be short)
  unsigned gen = 0;
  int home = 0;
  // The owner's pins, and frozen_bit: in the block's index slot, or here when the index had no
  // room for it.
  std::atomic<std::uint32_t>* state = &unindexed_state;
  gas_slot* slot = nullptr;
  std::atomic<std::uint32_t> unindexed_state{0};
  // Moved in, and the rank it came from has not yet let it go: it serves, but may not leave
  // (a second move or a free parks) until then, so that the home's directory updates, and a
  // return to the old owner, come in order.
  bool settling = false;
  std::function<void()> on_drained;           // what a freeze does once the last pin goes
  std::vector<std::function<void()>> parked;  // operations that found the block frozen
};

// Where an operation on an address goes from this rank.
struct gas_resolution {
  enum class step : std::uint8_t { run, forward, frozen, fail } what = step::fail;
  int rank = -1;               // forward: to this rank
  std::byte* where = nullptr;  // run: the first byte, pinned
  gas_block* block = nullptr;  // run: what to unpin
  std::string why;             // fail
};

// A run of block numbers, as an allocation holds them.
struct gas_run {
  std::uint64_t first = 0, count = 0;
};

class gas_table {
 public:
  gas_table(int rank, int ranks, const rill::config& cfg);
  ~gas_table();

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  // The decision for [a, a + bytes), aligned to `align`, from a message that took `hops` hops.
  // run: the range is pinned here (unpin after); forward: to `rank`; frozen: park it and retry;
  // fail: why.
  gas_resolution resolve(gaddr a, std::uint64_t bytes, std::uint64_t align, int hops);
  // Whether a's block is here, of a's generation, and not leaving.
  bool holds_settled(gaddr a);
  // Parks `retry` on a's block if it is still frozen here; false (retry now) otherwise.
  bool park(gaddr a, std::function<void()>& retry);
  // Ends a pin; runs the freeze's continuation if this was the last pin of a frozen block.
  static void unpin(gas_block* b);
  // The index in this rank's segment, where the segment starts, and the visit words of every rank
  // that maps it (rill/detail/gas_index.hpp); once, at start-up.
  void set_index(gas_index index, std::byte* segment_base, gas_visitors* own, std::vector<gas_visitors*> visitors);

  // Freezing for a move or a free: resolve's answer, except that `run` means the block is now
  // frozen and `leave(block)` will run (at once, or when the last pin goes).
  gas_resolution freeze(gaddr a, int hops, std::function<void(gas_block*)> leave);
  // Takes a frozen block out of this rank: forgets it, remembers `new_owner` as its place, and
  // returns its parked operations (to route again) and memory (for the caller to free).
  std::pair<std::vector<std::function<void()>>, std::byte*> release(std::uint64_t key, int new_owner);

  // Undoes a freeze whose move failed: the block serves again; returns the operations parked meanwhile.
  std::vector<std::function<void()>> thaw(std::uint64_t key);
  // The block moved in has been let go by its old owner: it may leave again; returns the
  // moves and frees parked meanwhile.
  std::vector<std::function<void()>> settle(std::uint64_t key);
  // Takes back a block created for an allocation that failed on another rank (its address was
  // never given out), with its directory entry if this rank is its home; its memory, for the
  // caller to free.
  std::byte* discard(std::uint64_t key);
  // Blocks arriving here (created, or moved in).
  void install(std::uint64_t key, unsigned gen, int home, std::byte* data, std::uint64_t bytes, bool moved);
  // Directory entries of the blocks homed here.
  void set_owner(std::uint64_t key, unsigned gen, int owner);
  void forget_owner(std::uint64_t key);
  // A learned owner (from a forwarded operation's answer).
  void learn(std::uint64_t key, int owner);

  // Block numbers of the (cyclic, size class) space this rank manages; aligned to `align` blocks.
  std::optional<gas_run> take_blocks(bool cyclic, unsigned size_class, std::uint64_t count, std::uint64_t align,
                                     unsigned& gen);
  // Remembers an allocation starting at `base` (key of its first block), or refuses a second free.
  void record_allocation(std::uint64_t base_key, unsigned gen, gas_run run, std::uint64_t bytes);
  struct allocation {
    unsigned gen;
    gas_run run;
    std::uint64_t bytes;
    bool freeing;
  };
  // The allocation starting at `a` (its generation matching), marked as being freed; nullopt and
  // `why` if there is none or it is being freed already.
  std::optional<allocation> start_free(gaddr a, std::string& why);
  // Returns the allocation's block numbers for reuse.
  void finish_free(gaddr base);

  void set_cache(gas_cache_policy policy, std::size_t entries);
  // What the rank's threads' own guesses of moved blocks' owners are worth (gas_protocol.cpp): the
  // epoch they must carry to be used, 0 while the cache is bounded (a bound the program chose must
  // hold for every guess); a new cache starts a new epoch, so it starts empty there too.
  std::uint32_t guess_epoch() const { return guess_epoch_.load(std::memory_order_relaxed); }
  gas_stats stats();

 private:
  gas_resolution route_elsewhere(gaddr a, std::uint64_t key, int hops);
  // A null or foreign address: true, with r.why.
  bool malformed(gaddr a, gas_resolution& r) const;
  // Under lock_: a's block if this rank holds it, with r.what run (serving), frozen, or fail (a
  // freed generation, r.why); nullptr if it is not here.
  gas_block* held_here(gaddr a, gas_resolution& r);
  struct space {
    std::uint64_t next = 0;                            // the first never-used block number
    std::multimap<std::uint64_t, std::uint64_t> free;  // count -> first
    unsigned gen = 0;                                  // the next allocation's generation
  };

  const int rank_, ranks_;
  spinlock lock_;
  gas_index index_;
  std::byte* segment_base_ = nullptr;
  std::atomic<std::uint32_t> guess_epoch_{1};
  std::uint32_t epochs_ = 1;
  gas_visitors* own_visitors_ = nullptr;  // this rank's threads' visit words
  std::vector<gas_visitors*> visitors_;
  std::unordered_map<std::uint64_t, std::unique_ptr<gas_block>> held_;
  std::unordered_map<std::uint64_t, std::pair<int, unsigned>> directory_;  // key -> owner, generation
  translation_cache cache_;
  std::map<std::pair<bool, unsigned>, space> spaces_;
  std::unordered_map<std::uint64_t, allocation> allocations_;  // by the first block's key
  std::uint64_t forwarded_ = 0, parked_ = 0, moved_in_ = 0, moved_out_ = 0;
};

}  // namespace rill::detail
