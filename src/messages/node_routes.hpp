// Which ranks form a node for hierarchical aggregation (Grappa §4.1), and the way a message takes
// to a rank of another node.
//
// --rill:ranks-per-node=K groups ranks into nodes of K consecutive ranks (the last node may have
// fewer). A rank aggregates what it sends to a rank of its own node per destination rank, and what
// it sends to another node per destination node: one buffer for all of that node's ranks. A buffer
// whose messages are all for one rank goes to that rank; one with several goes to the sender's peer
// on that node (the rank with the sender's index within its node), which splits it and forwards the
// other ranks' messages to them (messages/routed_wire.hpp). So a rank keeps at most K + nodes - 1
// buffers, however many ranks there are. K = 1 is one buffer per destination rank (the default on
// the local transport; under mpi the default is the launcher's nodes, src/transport/node_layout.hpp).
#pragma once

#include <algorithm>
#include <cstddef>

namespace rill::detail {

class node_routes {
 public:
  node_routes(int self, int ranks, int ranks_per_node)
      : self_(self), ranks_(ranks), per_node_(std::clamp(ranks_per_node, 1, ranks)) {}

  int ranks() const { return ranks_; }
  int ranks_per_node() const { return per_node_; }
  int nodes() const { return (ranks_ + per_node_ - 1) / per_node_; }
  int node_of(int rank) const { return rank / per_node_; }
  // A rank's index within its node, and the rank with index `local` on `node`.
  int local_index(int rank) const { return rank % per_node_; }
  int rank_at(int node, int local) const { return node * per_node_ + local; }
  int node_size(int node) const { return std::min(per_node_, ranks_ - node * per_node_); }
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }

  // Aggregation queues: one per rank of this rank's node (by local index), then one per node.
  int routes() const { return per_node_ + nodes(); }
  int route_of(int dest) const { return same_node(dest, self_) ? local_index(dest) : per_node_ + node_of(dest); }
  // The queue of route r holds messages for one rank only (r names a rank of this node).
  bool is_rank_route(int route) const { return route < per_node_; }
  int node_of_route(int route) const { return route - per_node_; }
  int rank_of_route(int route) const { return rank_at(node_of(self_), route); }

  // Where a buffer for several ranks of `node` goes: the rank with this rank's local index there
  // (spreading the splitting over the node's ranks), or its last rank on a smaller node.
  int peer_on(int node) const { return rank_at(node, std::min(local_index(self_), node_size(node) - 1)); }

 private:
  const int self_;
  const int ranks_;
  const int per_node_;
};

}  // namespace rill::detail
