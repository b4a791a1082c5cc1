// The tree over the ranks that termination waves travel (src/common/rank_tree.hpp): every rank but
// rank 0 is the child of exactly one rank, its parent; no rank has more than `fanout` children; and
// the tree is as shallow as a tree of that fan-out can be.
#include "common/rank_tree.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using rill::detail::rank_tree;

int depth_of(const rank_tree& t, int r) {
  int d = 0;
  for (; r != 0; r = t.parent(r)) ++d;
  return d;
}

TEST(RankTree, EveryRankButTheRootIsTheChildOfItsParentOnly) {
  for (int ranks = 1; ranks <= 300; ++ranks)
    for (int fanout : {2, 3, 4, 16, 1024}) {
      const rank_tree t{ranks, fanout};
      std::vector<int> parent_of(static_cast<std::size_t>(ranks), -1);
      for (int r = 0; r < ranks; ++r) {
        ASSERT_GE(t.children(r), 0);
        ASSERT_LE(t.children(r), fanout);
        for (int c = t.first_child(r); c < t.first_child(r) + t.children(r); ++c) {
          ASSERT_GT(c, r) << "a child comes after its parent";
          ASSERT_LT(c, ranks);
          ASSERT_EQ(parent_of[static_cast<std::size_t>(c)], -1) << "rank " << c << " has two parents";
          parent_of[static_cast<std::size_t>(c)] = r;
        }
      }
      for (int r = 1; r < ranks; ++r) {
        ASSERT_EQ(parent_of[static_cast<std::size_t>(r)], t.parent(r)) << r << " of " << ranks << ", fanout " << fanout;
      }
      EXPECT_EQ(parent_of[0], -1) << "the root has no parent";
    }
}

TEST(RankTree, DepthIsLogarithmicInTheRanks) {
  // A full tree of fan-out F and depth d holds (F^(d+1) - 1) / (F - 1) ranks.
  EXPECT_EQ(depth_of(rank_tree{21, 4}, 20), 2);
  EXPECT_EQ(depth_of(rank_tree{22, 4}, 21), 3);
  EXPECT_EQ(depth_of(rank_tree{10000, 16}, 9999), 4);
  EXPECT_EQ(depth_of(rank_tree{65535, 2}, 65534), 15);
  const rank_tree flat{50, 1024};
  for (int r = 1; r < 50; ++r) EXPECT_EQ(flat.parent(r), 0);
}

}  // namespace
