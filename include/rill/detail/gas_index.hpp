// The index of the AGAS blocks a rank holds, kept in its segment (rill/detail/segment_layout.hpp),
// so that a rank that maps the segment -- every rank on the local transport; under MPI, the ranks
// of a node with --rill:shared-segments -- runs an operation on a block where it is, without a
// message: it finds the block's slot by the block's address and reaches its bytes through its view
// of the segment. Public (detail) because that lookup is inline in the operations of rill/gas.hpp.
//
// A block must not leave while such an operation runs on it, and a count of pins in the slot,
// bumped by every visiting rank, would bounce the slot's cache line between cores on every
// operation. So a visit is announced where only the visiting thread writes: its *visit word*, in
// its own rank's segment, odd while it visits. The visitor makes its word odd, then reads the
// slot's key, state and key again; the owner sets the frozen bit in the state, then reads the
// visit words of every rank that maps its segment and waits for each odd one to change
// (src/global/gas_visitors.hpp). Each side's store must be seen before its loads: the visitor's
// is plain, behind a compiler barrier, and the owner pays a membarrier(2) for both
// (rill/detail/asymmetric_fence.hpp), so a visit costs no locked instruction. Either the visitor sees the block frozen
// and goes by message, or the owner sees the visit and waits for it: a block leaves only after every visit that saw it
// serving has ended. Visits are short (operations must not suspend) and end before their results are delivered, so the
// wait is bounded.
//
// The slot's state also counts the owner's own pins (src/global/gas_table.hpp: operations arriving
// by message) and carries the frozen bit. Only the owner writes a slot (under its gas_table's
// lock). A slot with no block is frozen; filling one publishes the key, then unfreezes the state,
// so a visitor that reads the unfrozen state of a refilled slot reads the new key after it, and
// misses.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rill/detail/asymmetric_fence.hpp"
#include "rill/detail/segment_layout.hpp"
#include "rill/detail/segment_view.hpp"

namespace rill::detail {

struct gas_slot {
  static constexpr std::uint64_t empty = 0, removed = ~std::uint64_t{0};
  static constexpr std::uint32_t frozen_bit = 1u << 31;
  std::atomic<std::uint64_t> key;    // the block's address (gaddr::block().bits()), or empty, removed
  std::atomic<std::uint32_t> state;  // the owner's pins, and frozen_bit
  std::uint32_t unused;
  std::atomic<std::uint64_t> offset;  // of the block's first byte from the segment's start
  std::atomic<std::uint64_t> bytes;   // usable bytes of the block
};
static_assert(sizeof(gas_slot) == segment_layout::gas_slot_bytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "slots are shared between processes: their atomics must not hide a lock");

// A thread's visit word: odd while it runs an operation on another rank's block (or its own
// rank's, found through the index), even otherwise. Only the thread writes it, and the count of
// its visits to other ranks' blocks beside it (gas_stats::on_the_spot), so that counting takes no
// atomic read-modify-write.
struct alignas(64) gas_visit_word {
  std::atomic<std::uint64_t> sequence;
  std::atomic<std::uint64_t> elsewhere;
  void count_elsewhere() { elsewhere.store(elsewhere.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
};

// The calling thread's visit word once it has claimed one (src/global/gas_protocol.cpp), in its
// rank's segment: a thread serves one rank for its life.
inline constinit thread_local gas_visit_word* tls_visit_word = nullptr;

// Opens a visit on the calling thread's word: the value to close it with. The store is the
// frequent side of an asymmetric handshake: a freeze, rare, pays for both.
inline std::uint64_t open_visit(gas_visit_word& w) {
  const std::uint64_t entered = w.sequence.load(std::memory_order_relaxed) + 1;
  store_before_loads(w.sequence, entered);
  return entered;
}
inline void close_visit(gas_visit_word& w, std::uint64_t entered) {
  w.sequence.store(entered + 1, std::memory_order_release);
}

class gas_index {
 public:
  gas_index() = default;
  gas_index(gas_slot* slots, std::size_t count) : slots_(slots), mask_(count - 1) {}
  // The index in the segment that `v` maps (an empty index if it maps none).
  static gas_index in(const segment_view& v) {
    if (!v.mapped()) return {};
    return {reinterpret_cast<gas_slot*>(v.local_base() + segment_layout::gas_index_offset(v.size())),
            segment_layout::gas_slots(v.size())};
  }

  // Owner, once, on the segment's fresh memory: every slot empty and frozen.
  void clear();
  // Owner, under its gas_table's lock. A slot for the block at `key` (not in the index), serving
  // and unpinned; nullptr when its slots near the key's hash are all taken.
  gas_slot* insert(std::uint64_t key, std::uint64_t offset, std::uint64_t bytes);
  // The slot's block has gone (frozen, no pins, no visits): later lookups miss it.
  static void remove(gas_slot* s);

  // A visitor, inside an open visit: the slot of the block at `key` if the index holds it and it
  // is serving (not frozen); nullptr otherwise. The slot stays the block's until the visit ends.
  const gas_slot* find(std::uint64_t key) const {
    if (!slots_) return nullptr;
    for (std::size_t i = 0, at = home_slot(key); i < probes; ++i, at = (at + 1) & mask_) {
      const gas_slot& s = slots_[at];
      const std::uint64_t k = s.key.load(std::memory_order_seq_cst);
      if (k == gas_slot::empty) return nullptr;
      if (k != key) continue;
      if (s.state.load(std::memory_order_seq_cst) & gas_slot::frozen_bit) return nullptr;
      // Serving, and still this block's: the state was not a refill's (see above).
      return s.key.load(std::memory_order_seq_cst) == key ? &s : nullptr;
    }
    return nullptr;
  }

 private:
  // Lookups and inserts look at this many slots from the key's hash: a block beyond them is not
  // indexed, so that a visitor's miss stays cheap however full the index is.
  static constexpr std::size_t probes = 16;
  std::size_t home_slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & mask_;
  }

  gas_slot* slots_ = nullptr;
  std::size_t mask_ = 0;
};

}  // namespace rill::detail
