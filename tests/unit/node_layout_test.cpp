// Automatic --rill:ranks-per-node under mpi (src/transport/node_layout.hpp): the launcher's nodes are
// usable as nodes of K consecutive ranks exactly when every node but the last holds K ranks in a row.
#include "transport/node_layout.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using rill::detail::consecutive_ranks_per_node;

// The lowest rank of each rank's node, for ranks placed on nodes as `node_of` says.
std::vector<int> first_ranks(const std::vector<int>& node_of) {
  std::vector<int> first(node_of.size());
  for (std::size_t r = 0; r < node_of.size(); ++r) {
    std::size_t f = 0;
    while (node_of[f] != node_of[r]) ++f;
    first[r] = static_cast<int>(f);
  }
  return first;
}

TEST(NodeLayout, NodesOfConsecutiveRanksGiveTheirSize) {
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 0, 0, 1, 1, 1, 1})), 4);
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3})), 3);
}

TEST(NodeLayout, TheLastNodeMayHoldFewer) {
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 0, 0, 1, 1, 1, 1, 2, 2})), 4);
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 0, 1})), 3);
}

TEST(NodeLayout, OneNodeHoldsEveryRank) {
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 0, 0, 0})), 5);
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0})), 1);
  EXPECT_EQ(consecutive_ranks_per_node({}), 1);
}

TEST(NodeLayout, OneRankPerNodeIsOne) { EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 1, 2, 3})), 1); }

TEST(NodeLayout, RanksSpreadRoundRobinGiveOne) {
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 1, 0, 1, 0, 1, 0, 1})), 1);
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 1, 2, 0, 1, 2})), 1);
}

TEST(NodeLayout, NodesOfDifferentSizesGiveOne) {
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 1, 1, 1, 1, 2, 2})), 1);
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 0, 0, 1, 1, 2, 2, 2, 2})), 1);
  // A smaller node that is not the last.
  EXPECT_EQ(consecutive_ranks_per_node(first_ranks({0, 0, 1, 2, 2})), 1);
}

}  // namespace
