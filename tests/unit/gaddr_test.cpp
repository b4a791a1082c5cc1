// The 64-bit AGAS address (rill/gaddr.hpp): its fields, arithmetic across blocks, and block keys.
#include "rill/gaddr.hpp"

#include <gtest/gtest.h>

namespace rill {
namespace {

TEST(gaddr, fields_round_trip_through_the_64_bits) {
  const gaddr a = gaddr::make(513, false, 12, 200, (std::uint64_t{77} << 12) + 40);
  EXPECT_EQ(a.home(1024), 513);
  EXPECT_FALSE(a.cyclic());
  EXPECT_EQ(a.size_class(), 12u);
  EXPECT_EQ(a.block_bytes(), 4096u);
  EXPECT_EQ(a.generation(), 200u);
  EXPECT_EQ(a.block_number(), 77u);
  EXPECT_EQ(a.byte_in_block(), 40u);
  EXPECT_EQ(a.block().byte_in_block(), 0u);
  EXPECT_EQ(gaddr::from_bits(a.bits()), a);
  EXPECT_TRUE(gaddr().is_null());
  EXPECT_FALSE(a.is_null());
}

TEST(gaddr, a_cyclic_address_has_its_block_number_as_home) {
  const gaddr a = gaddr::make(0, true, 6, 1, 0);
  for (std::int64_t b = 0; b < 20; ++b) EXPECT_EQ((a + b * 64).home(3), static_cast<int>(b % 3));
}

TEST(gaddr, arithmetic_crosses_blocks_and_keeps_the_other_fields) {
  const gaddr a = gaddr::make(5, false, 6, 9, 64 * 10);
  const gaddr b = a + 64 * 3 + 8;
  EXPECT_EQ(b.block_number(), 13u);
  EXPECT_EQ(b.byte_in_block(), 8u);
  EXPECT_EQ(b.home(8), 5);
  EXPECT_EQ(b.generation(), 9u);
  EXPECT_EQ(b - (64 * 3 + 8), a);
}

TEST(gaddr, the_block_key_ignores_the_byte_and_the_generation) {
  const gaddr a = gaddr::make(2, false, 10, 3, 1024 * 5 + 100);
  const gaddr b = gaddr::make(2, false, 10, 4, 1024 * 5);
  EXPECT_EQ(a.block_key(), b.block_key());
  EXPECT_NE(a.block_key(), (a + 1024).block_key());
  EXPECT_NE(a.block_key(), gaddr::make(3, false, 10, 3, 1024 * 5).block_key());
}

}  // namespace
}  // namespace rill
