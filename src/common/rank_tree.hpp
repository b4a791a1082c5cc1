// A tree over the ranks, rooted at rank 0, for protocols in which one rank would otherwise talk to
// every other (termination waves: rank 0 asking every rank, every rank answering rank 0). Sent
// down and gathered back up the tree, such a round costs each rank at most `fanout` + 1 messages
// and takes ceil(log_fanout(ranks)) hops each way, where the flat form costs one rank 2 (ranks - 1)
// messages (docs/scale.md).
//
// Rank r's children are r * fanout + 1 ... r * fanout + fanout (those that exist), its parent
// (r - 1) / fanout: the heap order, so a rank finds its place from its number alone.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rill::detail {

struct rank_tree {
  int ranks;
  int fanout;

  int parent(int r) const { return (r - 1) / fanout; }  // r > 0
  // The children of r: [first_child(r), first_child(r) + children(r)).
  int first_child(int r) const { return static_cast<int>(std::min<std::int64_t>(std::int64_t{r} * fanout + 1, ranks)); }
  int children(int r) const {
    return static_cast<int>(std::min<std::int64_t>(std::int64_t{r} * fanout + fanout, ranks - 1) -
                            (first_child(r) - 1));
  }
};

}  // namespace rill::detail
