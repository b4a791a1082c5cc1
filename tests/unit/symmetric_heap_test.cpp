// Unit tests of the global heap's offset allocator (src/global/symmetric_heap.hpp).
#include "global/symmetric_heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using rill::detail::symmetric_heap;

TEST(SymmetricHeap, RangesAreAlignedWholeCacheLinesThatDoNotOverlap) {
  symmetric_heap h(1 << 20);
  const auto pa = h.allocate(1, 8);
  const auto pb = h.allocate(100, 4096);
  const auto pc = h.allocate(64, 64);
  ASSERT_TRUE(pa && pb && pc);
  const std::uint64_t a = pa->offset, b = pb->offset, c = pc->offset;
  EXPECT_EQ(a % 64, 0u);
  EXPECT_EQ(b % 4096, 0u);
  EXPECT_GE(b, a + 64);  // a took a whole line
  EXPECT_GE(c, a + 64);
  EXPECT_TRUE(c + 64 <= b || c >= b + 128);  // b took two lines
  // Each has a generation tag of its own, never 0 (untagged).
  EXPECT_NE(pa->tag, 0);
  EXPECT_NE(pa->tag, pb->tag);
  EXPECT_NE(pb->tag, pc->tag);
  EXPECT_EQ(h.free_bytes(), h.size() - 64 - 128 - 64);
}

TEST(SymmetricHeap, FullHeapSaysSoAndFreedRangesMergeBackIntoOne) {
  symmetric_heap h(64 * 1024);
  std::vector<symmetric_heap::placed> taken;
  while (auto at = h.allocate(4096, 64)) taken.push_back(*at);
  EXPECT_EQ(taken.size(), 16u);
  EXPECT_EQ(h.free_bytes(), 0u);
  EXPECT_FALSE(h.allocate(64, 64));
  // Free in a scrambled order; the neighbours merge, so the whole heap is one range again.
  std::shuffle(taken.begin(), taken.end(), std::mt19937(7));
  for (const auto& at : taken) {
    const auto bytes = h.retire(at.offset, at.tag);
    ASSERT_TRUE(bytes);
    EXPECT_EQ(*bytes, 4096u);
    EXPECT_EQ(h.free_bytes() % 4096, 0u);
    h.recycle(at.offset, *bytes);
  }
  EXPECT_EQ(h.free_bytes(), h.size());
  const auto all = h.allocate(64 * 1024, 64);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->offset, 0u);
}

TEST(SymmetricHeap, RetiringWhatIsNotLiveIsRefusedAndARetiredRangeIsNotReusedUntilRecycled) {
  symmetric_heap h(8192);
  const auto a = h.allocate(8192, 64);
  ASSERT_TRUE(a);
  EXPECT_FALSE(h.retire(a->offset + 64, a->tag));  // not the start of an allocation
  const auto bytes = h.retire(a->offset, a->tag);
  ASSERT_TRUE(bytes);
  EXPECT_FALSE(h.retire(a->offset, a->tag));  // twice
  EXPECT_FALSE(h.allocate(64, 64));           // retired, not yet zeroed and recycled
  h.recycle(a->offset, *bytes);
  // Allocated again at the same place: a new generation, and the old one's handle frees nothing.
  const auto again = h.allocate(64, 64);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->offset, a->offset);
  EXPECT_NE(again->tag, a->tag);
  EXPECT_FALSE(h.retire(a->offset, a->tag));
  EXPECT_TRUE(h.retire(again->offset, again->tag));
}

TEST(SymmetricHeap, AnEmptyHeapHasNoRoom) {
  symmetric_heap h(0);
  EXPECT_FALSE(h.allocate(1, 1));
  EXPECT_EQ(h.free_bytes(), 0u);
}

}  // namespace
