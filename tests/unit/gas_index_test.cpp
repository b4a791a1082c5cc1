// The index of AGAS blocks in a rank's segment and the visits that reach them
// (rill/detail/gas_index.hpp, src/global/gas_visitors.hpp): lookups of serving, frozen, removed and refilled slots, a
// full neighbourhood, visit words, and visitors finding a block while its owner moves it out and back in -- a visit
// that found the block must always see its current place, because the owner waits for it, with
// sequentially consistent stores and with asymmetric fences.
#include "global/gas_visitors.hpp"

#include "rill/detail/asymmetric_fence.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

using rill::detail::gas_index;
using rill::detail::gas_slot;
using rill::detail::gas_visit_word;
using rill::detail::gas_visitors;

struct index_memory {
  explicit index_memory(std::size_t slots) : memory(slots), index(memory.data(), slots) { index.clear(); }
  std::vector<gas_slot> memory;
  gas_index index;
};

// Block addresses as the index sees them: any non-zero value but `removed`.
std::uint64_t key(std::uint64_t i) { return (i + 1) << 12; }

TEST(GasIndex, OnlyAServingBlockIsFound) {
  index_memory m(256);
  EXPECT_EQ(m.index.find(key(1)), nullptr) << "nothing indexed yet";
  gas_slot* s = m.index.insert(key(1), 4096, 64);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(m.index.find(key(1)), s);
  EXPECT_EQ(s->offset.load(), 4096u);
  EXPECT_EQ(s->bytes.load(), 64u);
  EXPECT_EQ(m.index.find(key(2)), nullptr);
  // The owner freezes it (a move or a free): visitors miss it and take the message path.
  s->state.fetch_or(gas_slot::frozen_bit);
  EXPECT_EQ(m.index.find(key(1)), nullptr);
  // Thawed (a move that failed): found again.
  s->state.fetch_and(~gas_slot::frozen_bit);
  EXPECT_EQ(m.index.find(key(1)), s);
  // The owner's own pins do not hide it.
  s->state.fetch_add(3);
  EXPECT_EQ(m.index.find(key(1)), s);
}

TEST(GasIndex, ARemovedBlockIsMissedAndItsSlotServesAnother) {
  index_memory m(256);
  gas_slot* s = m.index.insert(key(7), 0, 8);
  ASSERT_NE(s, nullptr);
  s->state.fetch_or(gas_slot::frozen_bit);
  gas_index::remove(s);
  EXPECT_EQ(m.index.find(key(7)), nullptr);
  // The same block back (moved away and home again), elsewhere in the segment: one slot, new place.
  gas_slot* again = m.index.insert(key(7), 8192, 8);
  ASSERT_EQ(again, s) << "the removed slot is the first free one on the key's path";
  ASSERT_EQ(m.index.find(key(7)), s);
  EXPECT_EQ(s->offset.load(), 8192u);
  // Blocks around it keep their slots.
  for (std::uint64_t i = 100; i < 150; ++i) ASSERT_NE(m.index.insert(key(i), i * 64, 64), nullptr);
  for (std::uint64_t i = 100; i < 150; ++i) {
    const gas_slot* q = m.index.find(key(i));
    ASSERT_NE(q, nullptr) << i;
    EXPECT_EQ(q->offset.load(), i * 64);
  }
}

TEST(GasIndex, AFullNeighbourhoodRefusesAnInsertAndTheBlockIsNotFound) {
  index_memory m(256);
  std::vector<std::uint64_t> in, out;
  for (std::uint64_t i = 0; i < 256; ++i) (m.index.insert(key(i), i, 8) ? in : out).push_back(key(i));
  EXPECT_FALSE(out.empty()) << "256 blocks cannot all sit within 16 slots of their hashes";
  EXPECT_GT(in.size(), 128u);
  for (std::uint64_t k : in) EXPECT_NE(m.index.find(k), nullptr);
  for (std::uint64_t k : out) EXPECT_EQ(m.index.find(k), nullptr);
}

TEST(GasIndex, VisitWordsAreClaimedOnceEachAndRunOut) {
  auto v = std::make_unique<gas_visitors>();
  std::vector<gas_visit_word*> words;
  for (std::size_t i = 0; i < gas_visitors::words; ++i) {
    gas_visit_word* w = v->claim();
    ASSERT_NE(w, nullptr);
    words.push_back(w);
  }
  EXPECT_EQ(v->claim(), nullptr) << "a thread past the last word goes by message";
  for (std::size_t i = 1; i < words.size(); ++i) EXPECT_NE(words[i], words[i - 1]);
  const std::uint64_t entered = rill::detail::open_visit(*words[0]);
  EXPECT_EQ(words[0]->sequence.load() % 2, 1u) << "odd while visiting";
  rill::detail::close_visit(*words[0], entered);
  EXPECT_EQ(words[0]->sequence.load() % 2, 0u);
  rill::detail::wait_for_visitors(std::vector<gas_visitors*>{v.get()});  // nobody visits: returns
}

// The owner moves one block out and back in, at a new offset each time, while visitors look it up
// by its key. A visitor that found it reads the offset the owner published for the block's current
// stay: the owner waits for the visits open when it froze the block before the block leaves.
void visitors_find_the_block_while_the_owner_moves_it() {
  index_memory m(256);
  auto visitors = std::make_unique<gas_visitors>();
  const std::vector<gas_visitors*> node{visitors.get()};
  const std::uint64_t k = key(42);
  std::atomic<std::uint64_t> current{0};  // the offset of the block's current stay; 0 while away
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> found{0}, stale_offsets{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&] {
      gas_visit_word* word = visitors->claim();
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t entered = rill::detail::open_visit(*word);
        if (const gas_slot* s = m.index.find(k)) {
          found.fetch_add(1, std::memory_order_relaxed);
          if (s->offset.load(std::memory_order_relaxed) != current.load(std::memory_order_acquire))
            stale_offsets.fetch_add(1);
        }
        rill::detail::close_visit(*word, entered);
      }
    });
  std::uint64_t offset = 64;
  for (int stay = 0; stay < 500; ++stay) {
    current.store(offset, std::memory_order_release);  // before any visitor can find this stay
    gas_slot* s = m.index.insert(k, offset, 8);
    ASSERT_NE(s, nullptr);
    for (int spin = 0; spin < 20; ++spin) std::this_thread::yield();
    s->state.fetch_or(gas_slot::frozen_bit, std::memory_order_seq_cst);
    rill::detail::wait_for_visitors(node);
    current.store(0, std::memory_order_release);
    gas_index::remove(s);
    // Other blocks come and go in the same neighbourhood, so the slot is refilled by strangers too.
    if (stay % 3 == 0) {
      if (gas_slot* stranger = m.index.insert(key(1000 + static_cast<std::uint64_t>(stay)), 8, 8)) {
        stranger->state.fetch_or(gas_slot::frozen_bit);
        gas_index::remove(stranger);
      }
    }
    offset += 64;
  }
  stop.store(true);
  for (auto& t : threads) t.join();
  EXPECT_GT(found.load(), 0u) << "the visitors found the block at some of its stays";
  EXPECT_EQ(stale_offsets.load(), 0u) << "a visit that found the block saw an offset of another stay";
}

// Sequentially consistent on both sides (the runtime's choice when the kernel offers no membarrier; a
// process starts so, and ctest runs each test in a process of its own)...
TEST(GasIndex, VisitorsFindTheBlockWhileTheOwnerMovesItOutAndBackIn) {
  visitors_find_the_block_while_the_owner_moves_it();
}

// ...and with plain stores behind a compiler barrier on the visitors' side, the owner's membarrier pairing with it
// (where the kernel offers it: otherwise this is the test above again).
TEST(GasIndex, VisitorsFindTheBlockWithLightFencesOnTheirSide) {
  rill::detail::enable_light_fences();
  visitors_find_the_block_while_the_owner_moves_it();
}

}  // namespace
