// Unit tests of the Chase-Lev work-stealing deque (src/scheduler/chase_lev_deque.hpp).
#include "scheduler/chase_lev_deque.hpp"
#include "scheduler/fiber.hpp"  // RILL_TSAN

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace {

using rill::detail::chase_lev_deque;

// Distinct, stable addresses to push.
std::vector<int> make_items(std::size_t n) {
  std::vector<int> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
  return v;
}

TEST(ChaseLevDeque, NewDequeIsEmpty) {
  chase_lev_deque<int*> d(4);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_EQ(d.steal(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDeque, OwnerPopsLifo) {
  auto items = make_items(5);
  chase_lev_deque<int*> d(8);
  for (auto& x : items) d.push(&x);
  EXPECT_FALSE(d.empty());
  for (int i = 4; i >= 0; --i) {
    int* p = d.pop();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, i);
  }
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDeque, ThievesStealFifo) {
  auto items = make_items(5);
  chase_lev_deque<int*> d(8);
  for (auto& x : items) d.push(&x);
  for (int i = 0; i < 5; ++i) {
    int* p = d.steal();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, i);
  }
  EXPECT_EQ(d.steal(), nullptr);
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDeque, PopAndStealTakeOppositeEnds) {
  auto items = make_items(4);
  chase_lev_deque<int*> d(4);
  for (auto& x : items) d.push(&x);
  EXPECT_EQ(d.steal(), &items[0]);
  EXPECT_EQ(d.pop(), &items[3]);
  EXPECT_EQ(d.steal(), &items[1]);
  EXPECT_EQ(d.pop(), &items[2]);
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_EQ(d.steal(), nullptr);
}

TEST(ChaseLevDeque, LastElementGoesToExactlyOneSide) {
  int x = 7;
  chase_lev_deque<int*> d(4);
  d.push(&x);
  EXPECT_EQ(d.pop(), &x);
  EXPECT_EQ(d.steal(), nullptr);
  d.push(&x);
  EXPECT_EQ(d.steal(), &x);
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDeque, EmptyAgainAfterPopOnEmpty) {
  // A pop on an empty deque must restore bottom; later pushes and pops work normally.
  auto items = make_items(3);
  chase_lev_deque<int*> d(4);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(d.pop(), nullptr);
  for (auto& x : items) d.push(&x);
  EXPECT_EQ(d.pop(), &items[2]);
  EXPECT_EQ(d.steal(), &items[0]);
  EXPECT_EQ(d.pop(), &items[1]);
  EXPECT_EQ(d.pop(), nullptr);
}

TEST(ChaseLevDeque, GrowsBeyondInitialCapacityKeepingLifoOrder) {
  constexpr std::size_t n = 10000;
  auto items = make_items(n);
  chase_lev_deque<int*> d(4);
  for (auto& x : items) d.push(&x);
  for (std::size_t i = n; i-- > 0;) {
    int* p = d.pop();
    ASSERT_EQ(p, &items[i]) << "at " << i;
  }
  EXPECT_EQ(d.pop(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDeque, GrowsBeyondInitialCapacityKeepingFifoSteals) {
  constexpr std::size_t n = 10000;
  auto items = make_items(n);
  chase_lev_deque<int*> d(4);
  for (auto& x : items) d.push(&x);
  for (std::size_t i = 0; i < n / 2; ++i) ASSERT_EQ(d.steal(), &items[i]) << "at " << i;
  for (std::size_t i = n; i-- > n / 2;) ASSERT_EQ(d.pop(), &items[i]) << "at " << i;
  EXPECT_EQ(d.steal(), nullptr);
  EXPECT_TRUE(d.empty());
}

TEST(ChaseLevDeque, GrowsWhileTopIsNotZero) {
  // Growth copies the live range [top, bottom) when top has moved and indices wrapped.
  constexpr int n = 1000;
  auto items = make_items(n);
  chase_lev_deque<int*> d(4);
  int next_push = 0;
  int next_steal = 0;
  // Advance top and bottom well past the capacity without growing.
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < 3; ++k) d.push(&items[static_cast<std::size_t>(next_push++)]);
    for (int k = 0; k < 3; ++k) ASSERT_EQ(d.steal(), &items[static_cast<std::size_t>(next_steal++)]);
  }
  EXPECT_TRUE(d.empty());
  while (next_push < n) d.push(&items[static_cast<std::size_t>(next_push++)]);
  while (next_steal < n) ASSERT_EQ(d.steal(), &items[static_cast<std::size_t>(next_steal++)]) << next_steal;
  EXPECT_EQ(d.pop(), nullptr);
}

// Owner pushes and pops N distinct pointers while `thieves` threads steal; every item must be
// taken exactly once.
void concurrent_exactly_once(int thieves) {
  constexpr std::size_t n = 200000;
  auto items = make_items(n);
  std::vector<std::atomic<int>> taken(n);
  auto record = [&](int* p) { taken[static_cast<std::size_t>(*p)].fetch_add(1, std::memory_order_relaxed); };

  chase_lev_deque<int*> d(2);  // tiny, so growth races with steals
  std::atomic<bool> done{false};
  std::atomic<std::size_t> stolen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thieves; ++t) {
    threads.emplace_back([&] {
      std::size_t mine = 0;
      for (;;) {
        const bool finished = done.load(std::memory_order_acquire);
        if (int* p = d.steal()) {
          record(p);
          ++mine;
        } else if (finished) {
          break;
        }
      }
      stolen.fetch_add(mine);
    });
  }

  std::size_t popped = 0;
  auto pop_one = [&] {
    if (int* p = d.pop()) {
      record(p);
      ++popped;
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    d.push(&items[i]);
    if (i < n / 2) {
      // First half: pop now and then (bursts of pushes let the deque grow while thieves steal).
      if (i % 3 == 2) pop_one();
    } else {
      // Second half: push one, pop one, so that most pops race thieves for the last element.
      pop_one();
    }
  }
  while (int* p = d.pop()) {
    record(p);
    ++popped;
  }
  done.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();

  EXPECT_EQ(popped + stolen.load(), n);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (taken[i].load() != 1) {
      if (++wrong <= 10) ADD_FAILURE() << "item " << i << " taken " << taken[i].load() << " times";
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(d.empty());
}

// Owner and thief race for a single element, round after round; the owner waits a varying number
// of spins before its pop so that the two attempts overlap in every possible way.
TEST(ChaseLevDeque, OwnerAndThiefRaceForLastElement) {
#if defined(RILL_TSAN)
  constexpr int rounds = 30000;  // each spin-wait round is slow under TSan
#else
  constexpr int rounds = 100000;
#endif
  auto items = make_items(rounds);
  std::vector<std::atomic<int>> taken(rounds);
  chase_lev_deque<int*> d(4);
  std::atomic<int> pushed{-1};
  std::atomic<int> thief_done{-1};
  std::thread thief([&] {
    for (int r = 0; r < rounds; ++r) {
      while (pushed.load(std::memory_order_acquire) < r) {
      }
      if (int* p = d.steal()) taken[static_cast<std::size_t>(*p)].fetch_add(1);
      thief_done.store(r, std::memory_order_release);
    }
  });
  int both_missed = 0;
  for (int r = 0; r < rounds; ++r) {
    d.push(&items[static_cast<std::size_t>(r)]);
    pushed.store(r, std::memory_order_release);
    volatile int delay = 0;
    for (int spin = 0; spin < r % 97; ++spin) delay = delay + spin;
    if (int* p = d.pop()) taken[static_cast<std::size_t>(*p)].fetch_add(1);
    while (thief_done.load(std::memory_order_acquire) < r) {
    }
    // Both attempts are over: exactly one of them got the element.
    if (taken[static_cast<std::size_t>(r)].load() == 0) ++both_missed;
    ASSERT_TRUE(d.empty()) << "round " << r;
  }
  thief.join();
  int wrong = 0;
  for (int r = 0; r < rounds; ++r)
    if (taken[static_cast<std::size_t>(r)].load() != 1 && ++wrong <= 10)
      ADD_FAILURE() << "round " << r << ": element taken " << taken[static_cast<std::size_t>(r)].load() << " times";
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(both_missed, 0);
}

TEST(ChaseLevDeque, ConcurrentOneThiefEveryItemTakenOnce) { concurrent_exactly_once(1); }
TEST(ChaseLevDeque, ConcurrentTwoThievesEveryItemTakenOnce) { concurrent_exactly_once(2); }
TEST(ChaseLevDeque, ConcurrentThreeThievesEveryItemTakenOnce) { concurrent_exactly_once(3); }

}  // namespace
