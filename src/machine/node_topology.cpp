#include "machine/node_topology.hpp"

#include <stdexcept>

namespace rill::detail {

node_topology::node_topology() {
  if (hwloc_topology_init(&topo_) != 0) throw std::runtime_error("rill: hwloc_topology_init failed");
  if (hwloc_topology_load(topo_) != 0) {
    hwloc_topology_destroy(topo_);
    throw std::runtime_error("rill: hwloc_topology_load failed");
  }
  allowed_ = hwloc_bitmap_alloc();
  if (!allowed_) {
    hwloc_topology_destroy(topo_);
    throw std::runtime_error("rill: hwloc_bitmap_alloc failed");
  }
  if (hwloc_get_cpubind(topo_, allowed_, HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(allowed_))
    hwloc_bitmap_copy(allowed_, hwloc_topology_get_topology_cpuset(topo_));
}

node_topology::~node_topology() {
  hwloc_bitmap_free(allowed_);
  hwloc_topology_destroy(topo_);
}

bool node_topology::whole_node() const {
  return hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topo_), allowed_);
}

}  // namespace rill::detail
