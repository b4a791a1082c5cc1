// The AGAS translation cache (src/global/translation_cache): each policy's bound and what it forgets.
#include "global/translation_cache.hpp"

#include <gtest/gtest.h>

#include <set>

namespace rill::detail {
namespace {

TEST(translation_cache, unbounded_remembers_everything_and_counts_hits_and_misses) {
  translation_cache c(gas_cache_policy::unbounded, 2, 1);
  for (std::uint64_t k = 0; k < 1000; ++k) c.insert(k, static_cast<int>(k % 7));
  EXPECT_EQ(c.size(), 1000u);
  EXPECT_EQ(c.find(999), 999 % 7);
  EXPECT_FALSE(c.find(1000));
  c.insert(999, 3);  // a correction
  EXPECT_EQ(c.find(999), 3);
  EXPECT_EQ(c.stats().hits, 2u);
  EXPECT_EQ(c.stats().misses, 1u);
  EXPECT_EQ(c.stats().evictions, 0u);
  c.erase(999);
  EXPECT_FALSE(c.find(999));
}

TEST(translation_cache, lru_forgets_the_least_recently_used_entry) {
  translation_cache c(gas_cache_policy::lru, 3, 1);
  c.insert(1, 10);
  c.insert(2, 20);
  c.insert(3, 30);
  EXPECT_EQ(c.find(1), 10);  // 1 is now the most recent; 2 the least
  c.insert(4, 40);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_FALSE(c.find(2));
  EXPECT_EQ(c.find(1), 10);
  EXPECT_EQ(c.find(3), 30);
  EXPECT_EQ(c.find(4), 40);
  c.insert(3, 33);  // updating makes 3 recent: 1 is the least recent now
  c.insert(5, 50);
  EXPECT_FALSE(c.find(1));
  EXPECT_EQ(c.find(3), 33);
  EXPECT_EQ(c.stats().evictions, 2u);
  c.erase(3);
  c.insert(6, 60);  // room after the erase: nothing forgotten
  EXPECT_EQ(c.stats().evictions, 2u);
  EXPECT_EQ(c.find(4), 40);
}

TEST(translation_cache, random_stays_within_its_bound_and_forgets_different_entries) {
  translation_cache c(gas_cache_policy::random, 64, 42);
  for (std::uint64_t k = 0; k < 10000; ++k) {
    c.insert(k, 1);
    ASSERT_LE(c.size(), 64u);
  }
  EXPECT_EQ(c.stats().evictions, 10000u - 64u);
  std::set<std::uint64_t> kept;
  for (std::uint64_t k = 0; k < 10000; ++k)
    if (c.find(k)) kept.insert(k);
  EXPECT_EQ(kept.size(), 64u);
  // Not simply the newest 64, as LRU would keep.
  EXPECT_LT(*kept.begin(), 10000u - 64u);
  for (std::uint64_t k : kept) c.erase(k);
  EXPECT_EQ(c.size(), 0u);
}

}  // namespace
}  // namespace rill::detail
