// This process's node as hwloc describes it, and the processors the process may run on: what the
// machine model (machine.cpp) and worker binding (worker_binding.cpp) both start from.
#pragma once

#include <hwloc.h>

namespace rill::detail {

class node_topology {
 public:
  // Loads the topology; std::runtime_error naming the hwloc call that failed.
  node_topology();
  ~node_topology();
  node_topology(const node_topology&) = delete;
  node_topology& operator=(const node_topology&) = delete;

  hwloc_topology_t get() const { return topo_; }
  // The processors this process may run on: its binding, or the whole node when it has none (or
  // hwloc cannot tell).
  hwloc_const_bitmap_t allowed() const { return allowed_; }
  // Whether the process may run on every processor of the node (no launcher bound it).
  bool whole_node() const;

 private:
  hwloc_topology_t topo_ = nullptr;
  hwloc_bitmap_t allowed_ = nullptr;
};

}  // namespace rill::detail
