// How the launcher placed ranks on nodes, as hierarchical aggregation (src/messages/node_routes.hpp)
// can use it: nodes of K consecutive ranks.
#pragma once

#include <span>

namespace rill::detail {

// K when every node holds K consecutive ranks (the last node may hold fewer), given for each rank
// the lowest rank of its node; 1 otherwise (ranks spread round-robin over the nodes, nodes of
// different sizes), where a node's ranks cannot be named by their numbers alone.
int consecutive_ranks_per_node(std::span<const int> first_rank_of_node);

}  // namespace rill::detail
