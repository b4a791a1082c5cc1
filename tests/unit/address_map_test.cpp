// The inline check of one-sided operations (rill/detail/address_map.hpp): a map's target() gives
// the element's address here exactly when its rank's segment is mapped and the range passes the
// segment's checks (bounds, alignment, and with every_tag the generation tags), and refuses
// everything else, so that the checked slow path can name the fault.
#include "rill/detail/address_map.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "global/segment.hpp"

namespace {

using rill::detail::address_map;
using rill::detail::range_fault;
using rill::detail::segment_view;
using rill::detail::with_tag;
namespace layout = rill::detail::segment_layout;

constexpr std::size_t segment_bytes = std::size_t{64} << 10;
constexpr std::uint8_t live_tag = 7;

// Two ranks' segments in one buffer each, seen at owner addresses far from where they lie here,
// as another process maps them; rank 1's is not mapped. Granules [first, first + 4) of rank 0
// carry live_tag: one 64-byte allocation.
struct two_segments {
  std::vector<std::byte> memory = std::vector<std::byte>(segment_bytes + layout::granule);
  std::byte* local =
      memory.data() + (layout::granule - reinterpret_cast<std::uintptr_t>(memory.data()) % layout::granule);
  std::uintptr_t owner = std::uintptr_t{1} << 40;
  std::vector<segment_view> views{segment_view(owner, local, segment_bytes), segment_view{}};
  std::vector<std::uintptr_t> heap_bases{0, 0};
  std::uintptr_t allocation = owner + layout::heap_start(segment_bytes) + 10 * layout::granule;

  two_segments() {
    std::byte* tags = local + layout::lock_bytes;
    std::memset(tags + views[0].granule_of(allocation), live_tag, 4);
  }
  address_map map(bool every_tag) const { return {2, 0, every_tag, views.data(), heap_bases.data()}; }
};

TEST(AddressMap, TranslatesAGoodRangeOfAMappedSegment) {
  two_segments s;
  const address_map m = s.map(true);
  const std::uintptr_t word = with_tag(s.allocation + 8, live_tag);
  EXPECT_EQ(m.target(0, word, 8, 8), s.local + (s.allocation + 8 - s.owner));
  EXPECT_EQ(m.target(0, with_tag(s.allocation, live_tag), 64, 8), s.local + (s.allocation - s.owner));
}

TEST(AddressMap, RefusesRanksItDoesNotMapOrThatDoNotExist) {
  two_segments s;
  const address_map m = s.map(true);
  const std::uintptr_t word = with_tag(s.allocation, live_tag);
  EXPECT_EQ(m.target(1, word, 8, 8), nullptr);   // not mapped here: the operation travels
  EXPECT_EQ(m.target(2, word, 8, 8), nullptr);   // no such rank
  EXPECT_EQ(m.target(-1, word, 8, 8), nullptr);  // no such rank
}

TEST(AddressMap, RefusesEveryFaultTheSegmentNames) {
  two_segments s;
  const address_map m = s.map(true);
  const segment_view& v = s.views[0];
  struct bad {
    std::uintptr_t tagged;
    std::size_t bytes, align;
    range_fault fault;
  };
  const std::uintptr_t header = s.owner + 64;  // the delegate locks and tags: not the heap
  const bad cases[] = {
      {with_tag(header, 0), 8, 8, range_fault::outside},
      {with_tag(s.owner + segment_bytes - 4, 0), 8, 4, range_fault::outside},
      {with_tag(s.allocation + 4, live_tag), 8, 8, range_fault::misaligned},
      {with_tag(s.allocation, live_tag + 1), 8, 8, range_fault::freed},
      {with_tag(s.allocation + 4 * layout::granule, live_tag), 8, 8, range_fault::freed},
      {with_tag(s.allocation + 48, live_tag), 32, 8, range_fault::past_end},
  };
  for (const bad& b : cases) {
    EXPECT_EQ(v.check(b.tagged, b.bytes, b.align), b.fault);
    EXPECT_EQ(m.target(0, b.tagged, b.bytes, b.align), nullptr) << "fault " << static_cast<int>(b.fault);
  }
}

TEST(AddressMap, ChecksBoundsOnlyWithoutEveryTag) {
  two_segments s;
  const address_map m = s.map(false);
  // --rill:tag-checks=home: a stale tag passes the inline check (the home and bulk paths catch it)...
  const std::uintptr_t stale = with_tag(s.allocation, live_tag + 1);
  EXPECT_EQ(m.target(0, stale, 8, 8), s.local + (s.allocation - s.owner));
  // ...but the bounds and the alignment do not.
  EXPECT_EQ(m.target(0, with_tag(s.owner + 64, 0), 8, 8), nullptr);
  EXPECT_EQ(m.target(0, with_tag(s.allocation + 4, live_tag), 8, 8), nullptr);
}

TEST(AddressMap, UntaggedPointersAreCheckedAgainstTheBounds) {
  two_segments s;
  const address_map m = s.map(true);
  const std::uintptr_t untagged = s.allocation + 30 * layout::granule;  // untagged memory, tag 0
  EXPECT_EQ(m.target(0, untagged, 8, 8), s.local + (untagged - s.owner));
}

// block_home is n % ranks for every 32-bit block number n, by multiplication: checked against the
// division for rank counts up to 300 and the largest (the 16 bits of a global address' home), on
// the numbers near the edges of the range and on random ones.
TEST(AddressMap, BlockHomeIsTheBlockNumberModuloTheRanks) {
  std::mt19937_64 random(12345);
  std::vector<int> rank_counts;
  for (int d = 1; d <= 300; ++d) rank_counts.push_back(d);
  for (int d : {1023, 1024, 4095, 65535, 65536}) rank_counts.push_back(d);
  for (int d : rank_counts) {
    address_map m;
    m.ranks = d;
    m.ranks_inverse = address_map::ranks_reciprocal(d);
    std::vector<std::uint32_t> numbers;
    for (std::uint32_t n = 0; n < 1000; ++n) numbers.push_back(n);
    for (std::uint32_t n = 0; n < 1000; ++n) numbers.push_back(0xffffffffu - n);
    for (std::uint32_t k = 1; k < 32; ++k) numbers.push_back(std::uint32_t{1} << k);
    for (int i = 0; i < 2000; ++i) numbers.push_back(static_cast<std::uint32_t>(random()));
    for (std::uint32_t n : numbers)
      ASSERT_EQ(m.block_home(n), static_cast<int>(n % static_cast<std::uint32_t>(d))) << n << " % " << d;
  }
}

}  // namespace
