// --rill:bind=cores: hwloc lists the cores this process may run on, and the workers take them in
// turn (see worker_binding.hpp).
#include "machine/worker_binding.hpp"

#include <utility>

#include "machine/node_topology.hpp"

namespace rill::detail {

namespace {

// The processors of `set` that are also in `allowed`.
std::vector<int> processors_of(hwloc_const_bitmap_t set, hwloc_const_bitmap_t allowed) {
  std::vector<int> out;
  int i = -1;
  hwloc_bitmap_foreach_begin(i, set) {
    if (hwloc_bitmap_isset(allowed, static_cast<unsigned>(i))) out.push_back(i);
  }
  hwloc_bitmap_foreach_end();
  return out;
}

}  // namespace

std::vector<std::vector<std::vector<int>>> worker_cores(int ranks_here, int workers, int node_index) {
  const node_topology node;
  hwloc_topology_t raw = node.get();

  // The cores with a processor this process may use, each as those of its processors it may use.
  std::vector<std::vector<int>> cores;
  const hwloc_obj_type_t unit = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(raw, unit, nullptr); o;
       o = hwloc_get_next_obj_by_type(raw, unit, o)) {
    std::vector<int> mine = processors_of(o->cpuset, node.allowed());
    if (!mine.empty()) cores.push_back(std::move(mine));
  }
  if (cores.empty()) cores.push_back(processors_of(node.allowed(), node.allowed()));

  const int first = node.whole_node() ? node_index * ranks_here * workers : 0;
  std::vector<std::vector<std::vector<int>>> out(static_cast<std::size_t>(ranks_here));
  for (int r = 0; r < ranks_here; ++r)
    for (int w = 0; w < workers; ++w)
      out[static_cast<std::size_t>(r)].push_back(
          cores[static_cast<std::size_t>(first + r * workers + w) % cores.size()]);
  return out;
}

}  // namespace rill::detail
