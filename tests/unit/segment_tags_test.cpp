// Generation tags of a segment (src/global/segment.hpp) and their per-page summary: whatever the
// summary lets a check skip, an access through a pointer to freed memory, to memory allocated
// again, or to a neighbouring allocation is refused exactly as the per-granule tags say.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "global/segment.hpp"

namespace {

using rill::detail::range_fault;
using rill::detail::segment;
using rill::detail::with_tag;
namespace layout = rill::detail::segment_layout;

constexpr std::size_t segment_bytes = std::size_t{4} << 20;
constexpr std::size_t global_heap_bytes = std::size_t{1} << 20;
constexpr std::size_t page_bytes = layout::summary_page * layout::granule;

struct a_segment {
  std::vector<std::byte> memory = std::vector<std::byte>(segment_bytes);
  segment s{memory.data(), segment_bytes, global_heap_bytes};

  // What checking `bytes` at byte `offset` of allocation `a`, through a pointer with `tag`, finds.
  range_fault check(const void* a, std::size_t offset, std::uint8_t tag, std::size_t bytes = 8) const {
    return s.view().check(with_tag(reinterpret_cast<std::uintptr_t>(a) + offset, tag), bytes, 8);
  }
};

TEST(SegmentTags, EveryWordOfALargeAllocationPassesUntilItIsFreed) {
  a_segment t;
  const std::size_t bytes = 5 * page_bytes + 3 * layout::granule;  // pages whole inside, two partial
  const segment::allocation a = t.s.allocate(bytes, 8);
  ASSERT_NE(a.at, nullptr);
  for (std::size_t off = 0; off < bytes; off += 8) ASSERT_EQ(t.check(a.at, off, a.tag), range_fault::none) << off;
  EXPECT_EQ(t.check(a.at, 0, a.tag, bytes), range_fault::none);
  EXPECT_EQ(t.check(a.at, bytes, a.tag), range_fault::freed);  // the granule after it
  ASSERT_TRUE(t.s.deallocate(a.at, a.tag));
  for (std::size_t off = 0; off < bytes; off += 8) ASSERT_EQ(t.check(a.at, off, a.tag), range_fault::freed) << off;
}

TEST(SegmentTags, MemoryAllocatedAgainRefusesTheOldGeneration) {
  a_segment t;
  const std::size_t bytes = 8 * page_bytes;
  const segment::allocation old = t.s.allocate(bytes, page_bytes);
  ASSERT_TRUE(t.s.deallocate(old.at, old.tag));
  const segment::allocation now = t.s.allocate(bytes, page_bytes);
  ASSERT_EQ(now.at, old.at);  // the same place, a new generation
  ASSERT_NE(now.tag, old.tag);
  for (std::size_t off = 0; off < bytes; off += 8) {
    ASSERT_EQ(t.check(now.at, off, now.tag), range_fault::none) << off;
    ASSERT_EQ(t.check(now.at, off, old.tag), range_fault::freed) << off;
  }
}

TEST(SegmentTags, SmallAllocationsSharingAPageKeepTheirOwnTags) {
  a_segment t;
  std::vector<segment::allocation> small;
  for (int i = 0; i < 64; ++i) small.push_back(t.s.allocate(48, 16));
  for (std::size_t i = 0; i + 1 < small.size(); ++i) {
    ASSERT_NE(small[i].at, nullptr);
    EXPECT_EQ(t.check(small[i].at, 40, small[i].tag), range_fault::none);
    // Its neighbour's pointer, moved into it, is refused.
    const auto* next = static_cast<const std::byte*>(small[i + 1].at);
    const auto* here = static_cast<const std::byte*>(small[i].at);
    EXPECT_NE(t.check(next, static_cast<std::size_t>(here - next), small[i + 1].tag), range_fault::none);
  }
}

TEST(SegmentTags, SetTagsOverPagesAgreesWithEveryGranuleUnderRandomRanges) {
  // The global heap's path: set_tags on ranges a rank does not allocate itself, in any order.
  a_segment t;
  const std::uintptr_t heap = reinterpret_cast<std::uintptr_t>(t.memory.data()) + segment_bytes - global_heap_bytes;
  std::vector<std::uint8_t> model(global_heap_bytes / layout::granule, 0);
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    const std::size_t first = rng() % model.size();
    const std::size_t count = 1 + rng() % std::min<std::size_t>(model.size() - first, 3 * layout::summary_page);
    const auto tag = static_cast<std::uint8_t>(rng() % 4);  // few tags: neighbours often agree
    t.s.set_tags(heap + first * layout::granule, count * layout::granule, tag);
    std::fill(model.begin() + static_cast<std::ptrdiff_t>(first),
              model.begin() + static_cast<std::ptrdiff_t>(first + count), tag);
    for (std::size_t g = 0; g < model.size(); g += 1 + rng() % 61)
      for (std::uint8_t probe = 1; probe < 4; ++probe) {
        const range_fault f = t.s.view().check(with_tag(heap + g * layout::granule, probe), 8, 8);
        ASSERT_EQ(f == range_fault::none, model[g] == probe) << "round " << round << ", granule " << g;
      }
  }
}

}  // namespace
