// Unit tests of the fiber stack pool (src/scheduler/stack_pool.hpp).
#include "scheduler/stack_pool.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "scheduler/fiber.hpp"  // RILL_ASAN / RILL_TSAN

namespace {

using rill::detail::stack_pool;
namespace ctx = boost::context;

std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

char* low_end(const ctx::stack_context& sc) { return static_cast<char*>(sc.sp) - sc.size; }

TEST(StackPool, SizeIsRoundedUpToWholePages) {
  const std::size_t p = page();
  stack_pool pool(3 * p + 1);
  EXPECT_EQ(pool.stack_bytes(), 4 * p);
  ctx::stack_context sc = pool.get();
  EXPECT_GE(sc.size, pool.stack_bytes());
  pool.put(sc);

  stack_pool exact(8 * p);
  EXPECT_EQ(exact.stack_bytes(), 8 * p);
}

TEST(StackPool, StackIsWritableOverItsFullSize) {
  stack_pool pool(64 * 1024);
  ctx::stack_context sc = pool.get();
  ASSERT_NE(sc.sp, nullptr);
  ASSERT_GE(sc.size, pool.stack_bytes());
  char* lo = low_end(sc);
  std::memset(lo, 0xA5, sc.size);
  // Touch the very first and very last bytes explicitly, then verify everything reads back.
  lo[0] = 0x11;
  lo[sc.size - 1] = 0x22;
  EXPECT_EQ(lo[0], 0x11);
  EXPECT_EQ(lo[sc.size - 1], 0x22);
  std::size_t bad = 0;
  for (std::size_t i = 1; i + 1 < sc.size; ++i) bad += static_cast<unsigned char>(lo[i]) != 0xA5;
  EXPECT_EQ(bad, 0u);
  pool.put(sc);
}

TEST(StackPool, PutStackIsReused) {
  stack_pool pool(16 * 1024);
  ctx::stack_context a = pool.get();
  ctx::stack_context b = pool.get();
  ASSERT_NE(a.sp, b.sp);
  pool.put(a);
  ctx::stack_context again = pool.get();
  EXPECT_EQ(again.sp, a.sp);
  EXPECT_EQ(again.size, a.size);
  // And it is still usable after reuse.
  std::memset(low_end(again), 0x5A, again.size);
  EXPECT_EQ(low_end(again)[again.size / 2], 0x5A);
  pool.put(b);
  pool.put(again);
  // Both come back (most recently returned first), no fresh mapping needed.
  ctx::stack_context x = pool.get();
  ctx::stack_context y = pool.get();
  EXPECT_EQ(x.sp, again.sp);
  EXPECT_EQ(y.sp, b.sp);
  pool.put(x);
  pool.put(y);
}

TEST(StackPool, DistinctStacksDoNotOverlap) {
  constexpr int n = 64;
  stack_pool pool(16 * 1024);
  std::vector<ctx::stack_context> stacks;
  for (int i = 0; i < n; ++i) stacks.push_back(pool.get());
  for (int i = 0; i < n; ++i) {
    const auto lo_i = reinterpret_cast<std::uintptr_t>(low_end(stacks[static_cast<std::size_t>(i)]));
    const auto hi_i = reinterpret_cast<std::uintptr_t>(stacks[static_cast<std::size_t>(i)].sp);
    for (int j = i + 1; j < n; ++j) {
      const auto lo_j = reinterpret_cast<std::uintptr_t>(low_end(stacks[static_cast<std::size_t>(j)]));
      const auto hi_j = reinterpret_cast<std::uintptr_t>(stacks[static_cast<std::size_t>(j)].sp);
      EXPECT_TRUE(hi_i <= lo_j || hi_j <= lo_i) << "stacks " << i << " and " << j << " overlap";
    }
  }
  // Fill each with its own byte, then check no stack was overwritten by another.
  for (int i = 0; i < n; ++i) {
    auto& sc = stacks[static_cast<std::size_t>(i)];
    std::memset(low_end(sc), i + 1, sc.size);
  }
  for (int i = 0; i < n; ++i) {
    auto& sc = stacks[static_cast<std::size_t>(i)];
    const char* lo = low_end(sc);
    EXPECT_EQ(lo[0], static_cast<char>(i + 1));
    EXPECT_EQ(lo[sc.size / 2], static_cast<char>(i + 1));
    EXPECT_EQ(lo[sc.size - 1], static_cast<char>(i + 1));
  }
  for (auto& sc : stacks) pool.put(sc);
}

TEST(StackPool, PoolsAreIndependent) {
  stack_pool a(16 * 1024);
  stack_pool b(32 * 1024);
  ctx::stack_context sa = a.get();
  a.put(sa);
  ctx::stack_context sb = b.get();
  EXPECT_NE(sb.sp, sa.sp);  // b never hands out a's free stack
  EXPECT_GE(sb.size, b.stack_bytes());
  b.put(sb);
}

// Stacks made one after another start at different offsets into a page (a cache line apart), so
// that the lines suspended fibers keep hot near their tops do not all share a few cache sets;
// each still has at least the pool's size.
TEST(StackPool, SuccessiveStacksStartAtDifferentOffsetsIntoAPage) {
  stack_pool pool(16 * 1024);
  std::vector<ctx::stack_context> stacks;
  std::set<std::uintptr_t> offsets;
  for (int i = 0; i < 64; ++i) {
    stacks.push_back(pool.get());
    const auto top = reinterpret_cast<std::uintptr_t>(stacks.back().sp);
    EXPECT_EQ(top % 64, 0u);
    EXPECT_GE(stacks.back().size, pool.stack_bytes());
    offsets.insert(top % page());
  }
  EXPECT_EQ(offsets.size(), 64u);
  for (auto& sc : stacks) pool.put(sc);
}

#if !defined(RILL_ASAN) && !defined(RILL_TSAN)
// Writes one byte just below the usable area of a fresh stack: that is the guard page.
void write_below(stack_pool& pool) {
  ctx::stack_context sc = pool.get();
  volatile char* below = low_end(sc) - 1;
  *below = 1;
}

TEST(StackPoolDeathTest, GuardPageBelowStackTraps) {
  stack_pool pool(16 * 1024);
  EXPECT_EXIT(write_below(pool), ::testing::KilledBySignal(SIGSEGV), "");
}

TEST(StackPoolDeathTest, GuardPageBelowReusedStackTraps) {
  stack_pool pool(16 * 1024);
  ctx::stack_context a = pool.get();
  ctx::stack_context b = pool.get();
  pool.put(a);
  pool.put(b);
  EXPECT_EXIT(write_below(pool), ::testing::KilledBySignal(SIGSEGV), "");  // reuses b
  EXPECT_EXIT(
      {
        ctx::stack_context x = pool.get();  // b
        ctx::stack_context y = pool.get();  // a
        (void)x;
        volatile char* below = low_end(y) - 1;
        *below = 1;
      },
      ::testing::KilledBySignal(SIGSEGV), "");
}
#endif

}  // namespace
