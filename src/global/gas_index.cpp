#include "global/gas_visitors.hpp"

#include <algorithm>
#include <thread>

namespace rill::detail {

gas_visitors* gas_visitors::in(const segment_view& v) {
  if (!v.mapped()) return nullptr;
  return reinterpret_cast<gas_visitors*>(v.local_base() + segment_layout::gas_visits_offset(v.size()));
}

gas_visit_word* gas_visitors::claim() {
  const std::uint32_t n = claimed.fetch_add(1, std::memory_order_acq_rel);
  return n < words ? &word[n] : nullptr;
}

std::uint64_t gas_visitors::elsewhere() const {
  const std::size_t n = std::min<std::size_t>(claimed.load(std::memory_order_acquire), words);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += word[i].elsewhere.load(std::memory_order_relaxed);
  return sum;
}

void gas_index::clear() {
  for (std::size_t i = 0; i <= mask_ && slots_; ++i) {
    slots_[i].state.store(gas_slot::frozen_bit, std::memory_order_relaxed);
    slots_[i].key.store(gas_slot::empty, std::memory_order_relaxed);
  }
}

gas_slot* gas_index::insert(std::uint64_t key, std::uint64_t offset, std::uint64_t bytes) {
  if (!slots_) return nullptr;
  for (std::size_t i = 0, at = home_slot(key); i < probes; ++i, at = (at + 1) & mask_) {
    gas_slot& s = slots_[at];
    const std::uint64_t k = s.key.load(std::memory_order_relaxed);
    if (k != gas_slot::empty && k != gas_slot::removed) continue;
    s.offset.store(offset, std::memory_order_relaxed);
    s.bytes.store(bytes, std::memory_order_relaxed);
    // The key before the state: a visitor that reads this serving state reads this key after it.
    s.key.store(key, std::memory_order_seq_cst);
    s.state.store(0, std::memory_order_seq_cst);
    return &s;
  }
  return nullptr;
}

void gas_index::remove(gas_slot* s) {
  // Frozen already when the block left after a freeze; a block discarded unfrozen was never named
  // to anyone, but the slot must end frozen either way.
  s->state.fetch_or(gas_slot::frozen_bit, std::memory_order_seq_cst);
  s->key.store(gas_slot::removed, std::memory_order_seq_cst);
}

void wait_for_visitors(std::span<gas_visitors* const> ranks) {
  // The frozen bit is set: every visit that opened without seeing it is visible after this.
  heavy_fence();
  for (gas_visitors* v : ranks) {
    if (!v) continue;
    const std::size_t n = std::min<std::size_t>(v->claimed.load(std::memory_order_acquire), gas_visitors::words);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t seen = v->word[i].sequence.load(std::memory_order_seq_cst);
      if ((seen & 1) == 0) continue;
      // A visit runs one short operation that does not suspend; its thread may have been
      // descheduled, so give the core away while waiting.
      while (v->word[i].sequence.load(std::memory_order_acquire) == seen) std::this_thread::yield();
    }
  }
}

}  // namespace rill::detail
