#include "transport/node_layout.hpp"

#include <cstddef>

namespace rill::detail {

int consecutive_ranks_per_node(std::span<const int> first_rank_of_node) {
  const int ranks = static_cast<int>(first_rank_of_node.size());
  if (ranks == 0) return 1;
  // The first node's size: the ranks up to the first one of another node.
  int k = 1;
  while (k < ranks && first_rank_of_node[static_cast<std::size_t>(k)] == 0) ++k;
  for (int r = 0; r < ranks; ++r)
    if (first_rank_of_node[static_cast<std::size_t>(r)] != r / k * k) return 1;
  return k;
}

}  // namespace rill::detail
