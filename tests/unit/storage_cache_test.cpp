// Unit tests of the storage kept for system-memory instances (src/data/storage_cache.hpp).
#include "data/storage_cache.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

namespace {

using rill::detail::storage_cache;
constexpr std::size_t KiB = 1024;
constexpr std::size_t any_room = std::size_t{1} << 40;  // what take may leave kept

TEST(storage_cache, a_block_given_back_is_taken_again_for_its_size_with_its_contents_kept) {
  storage_cache cache(64 * 1024 * KiB);
  const storage_cache::block a = cache.take(512 * KiB, any_room);
  ASSERT_NE(a.at, nullptr);
  EXPECT_EQ(a.bytes, 512 * KiB);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.at) % 4096, 0u) << "storage of a page or more starts on a page";
  std::memset(a.at, 7, a.bytes);
  cache.give(a);
  EXPECT_EQ(cache.kept(), a.bytes);
  // A little smaller takes it too (within an eighth), as it is: the same pages, written already.
  const storage_cache::block again = cache.take(480 * KiB, any_room);
  EXPECT_EQ(again.at, a.at);
  EXPECT_EQ(again.bytes, a.bytes) << "the block is the storage's size, not what was asked";
  EXPECT_EQ(again.at[480 * KiB - 1], std::byte{7});
  EXPECT_EQ(cache.kept(), 0u);
  cache.give(again);
}

TEST(storage_cache, a_block_much_larger_than_asked_is_not_taken) {
  storage_cache cache(64 * 1024 * KiB);
  const storage_cache::block big = cache.take(1024 * KiB, any_room);
  cache.give(big);
  const storage_cache::block half = cache.take(512 * KiB, any_room);
  EXPECT_NE(half.at, big.at);
  EXPECT_EQ(half.bytes, 512 * KiB);
  EXPECT_EQ(cache.kept(), 1024 * KiB) << "the larger block stays kept";
  cache.give(half);
}

TEST(storage_cache, small_blocks_and_blocks_beyond_the_bound_go_back_to_the_system) {
  storage_cache cache(1024 * KiB);
  cache.give(cache.take(4 * KiB, any_room));
  EXPECT_EQ(cache.kept(), 0u) << "a block under 64 KiB was kept";
  const storage_cache::block a = cache.take(768 * KiB, any_room), b = cache.take(768 * KiB, any_room);
  cache.give(a);
  cache.give(b);
  EXPECT_EQ(cache.kept(), 768 * KiB) << "more than the bound is kept";
  storage_cache none(0);
  none.give(none.take(512 * KiB, any_room));
  EXPECT_EQ(none.kept(), 0u) << "--rill:memory-keep=0 kept a block";
}

TEST(storage_cache, trim_gives_back_the_largest_blocks_first) {
  storage_cache cache(64 * 1024 * KiB);
  const storage_cache::block small = cache.take(128 * KiB, any_room), mid = cache.take(512 * KiB, any_room),
                             big = cache.take(2048 * KiB, any_room);
  cache.give(small);
  cache.give(mid);
  cache.give(big);
  cache.trim(1024 * KiB);
  EXPECT_EQ(cache.kept(), 640 * KiB) << "the 2 MiB block alone brings it under 1 MiB";
  cache.trim(200 * KiB);
  EXPECT_EQ(cache.kept(), 128 * KiB);
  EXPECT_EQ(cache.take(128 * KiB, any_room).at, small.at);
  cache.give({small.at, small.bytes});
}

TEST(storage_cache, taking_leaves_no_more_kept_than_the_room_asked_and_keeps_the_block_it_takes) {
  storage_cache cache(64 * 1024 * KiB);
  const storage_cache::block a = cache.take(1024 * KiB, any_room), b = cache.take(256 * KiB, any_room);
  cache.give(a);
  cache.give(b);
  // Room for none beside it: the block that fits is taken, not given back first; the other goes.
  const storage_cache::block again = cache.take(1024 * KiB, 0);
  EXPECT_EQ(again.at, a.at);
  EXPECT_EQ(cache.kept(), 0u);
  cache.give(again);
}

}  // namespace
