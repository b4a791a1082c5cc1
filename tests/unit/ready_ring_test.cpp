// Unit tests of the ready queue of a worker (src/scheduler/ready_ring.hpp).
#include "scheduler/ready_ring.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

namespace {

using rill::detail::fiber_rec;
using rill::detail::ready_ring;

TEST(ReadyRing, StartsEmptyAndPeeksNothing) {
  ready_ring q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.peek(0), nullptr);
}

// First in, first out, while the ring wraps around its array and grows with its oldest entry
// part-way through it; peek(i) sees the i-th oldest and nothing past the newest.
TEST(ReadyRing, KeepsArrivalOrderAcrossWrapAroundAndGrowth) {
  std::vector<fiber_rec> recs(1000);
  ready_ring q;
  std::deque<fiber_rec*> expected;
  std::size_t next = 0;
  auto push = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i, ++next) {
      q.push(&recs[next % recs.size()]);
      expected.push_back(&recs[next % recs.size()]);
    }
  };
  auto pop = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_FALSE(q.empty());
      ASSERT_EQ(q.pop(), expected.front());
      expected.pop_front();
    }
  };
  auto check_peeks = [&] {
    ASSERT_EQ(q.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(q.peek(i), expected[i]) << i;
    EXPECT_EQ(q.peek(expected.size()), nullptr);
  };
  push(40);
  pop(30);   // the oldest now sits part-way into the array
  push(50);  // wraps around the end of the first array, then grows
  check_peeks();
  pop(35);
  push(300);  // grows twice more with the oldest part-way in
  check_peeks();
  for (int round = 0; round < 50; ++round) {  // a steady queue: pop one, push one
    pop(1);
    push(1);
  }
  check_peeks();
  pop(expected.size());
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.peek(0), nullptr);
}

}  // namespace
