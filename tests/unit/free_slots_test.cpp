// Unit tests of the event table's free-slot set (src/events/free_slots.hpp): lowest index first.
#include "events/free_slots.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>

namespace {

using rill::detail::free_slots;

TEST(FreeSlots, EmptySetHasNothingToTake) {
  free_slots f;
  EXPECT_EQ(f.size(), 0u);
  EXPECT_FALSE(f.take_lowest().has_value());
}

TEST(FreeSlots, TakesTheLowestWhateverTheOrderOfFrees) {
  free_slots f;
  for (std::uint32_t i : {700u, 3u, 64u, 4095u, 63u, 4096u, 0u}) f.insert(i);
  EXPECT_EQ(f.size(), 7u);
  for (std::uint32_t want : {0u, 3u, 63u, 64u, 700u, 4095u, 4096u}) EXPECT_EQ(f.take_lowest(), want);
  EXPECT_FALSE(f.take_lowest().has_value());
}

TEST(FreeSlots, AFreedLowSlotComesBeforeHigherOnes) {
  free_slots f;
  for (std::uint32_t i = 5000; i < 5010; ++i) f.insert(i);
  EXPECT_EQ(f.take_lowest(), 5000u);
  f.insert(17);  // below the point the search had advanced to
  EXPECT_EQ(f.take_lowest(), 17u);
  EXPECT_EQ(f.take_lowest(), 5001u);
}

// Random frees and takes over several summary words, checked against an ordered set.
TEST(FreeSlots, MatchesAnOrderedSetUnderRandomUse) {
  free_slots f;
  std::set<std::uint32_t> model;
  std::mt19937 rng(12345);
  std::uint32_t next_new = 0;  // slots never handed out yet, as the table grows
  std::set<std::uint32_t> in_use;
  for (int step = 0; step < 200'000; ++step) {
    // The first half grows the table, the second shrinks it.
    const bool allocate = rng() % 10 < (step < 100'000 ? 6u : 4u);
    if (allocate || in_use.empty()) {
      // Allocate: the lowest free slot, else a new one.
      const auto got = f.take_lowest();
      if (model.empty()) {
        ASSERT_FALSE(got.has_value());
        in_use.insert(next_new++);
      } else {
        ASSERT_TRUE(got.has_value());
        ASSERT_EQ(*got, *model.begin());
        model.erase(model.begin());
        in_use.insert(*got);
      }
    } else {
      // Free a random slot in use.
      auto it = in_use.lower_bound(static_cast<std::uint32_t>(rng() % (next_new + 1)));
      if (it == in_use.end()) it = in_use.begin();
      f.insert(*it);
      model.insert(*it);
      in_use.erase(it);
    }
    ASSERT_EQ(f.size(), model.size());
  }
  EXPECT_GT(next_new, 64u * 64u);  // the run reached a second summary word
}

}  // namespace
