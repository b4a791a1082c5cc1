// Where --rill:bind=cores puts each worker of this process's ranks: one core each.
#pragma once

#include <vector>

namespace rill::detail {

// The processors (OS indices of the hardware threads) of the core each worker runs on, by rank of
// this process (in the order of its endpoints) and worker. Workers take the cores this process may
// run on in turn, rank after rank, so that two workers share a core only when there are more
// workers than cores. `node_index` is this process's index among the processes of its node: when
// each may run on the whole node (no launcher binding), it starts that many ranks' worth of cores
// further on, so processes of one node do not pile onto the same cores.
std::vector<std::vector<std::vector<int>>> worker_cores(int ranks_here, int workers, int node_index);

}  // namespace rill::detail
