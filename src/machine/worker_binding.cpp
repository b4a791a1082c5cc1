// --rill:bind=cores: hwloc lists the cores this process may run on, and the workers take them in
// turn (see worker_binding.hpp).
#include "machine/worker_binding.hpp"

#include <hwloc.h>

#include <memory>
#include <stdexcept>

namespace rill::detail {

namespace {

struct topology_deleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
struct bitmap_deleter {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using bitmap = std::unique_ptr<hwloc_bitmap_s, bitmap_deleter>;

std::vector<int> processors_of(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  int i = -1;
  hwloc_bitmap_foreach_begin(i, set) { out.push_back(i); }
  hwloc_bitmap_foreach_end();
  return out;
}

}  // namespace

std::vector<std::vector<std::vector<int>>> worker_cores(int ranks_here, int workers, int node_index) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("rill: hwloc_topology_init failed");
  std::unique_ptr<hwloc_topology, topology_deleter> topo(raw);
  if (hwloc_topology_load(raw) != 0) throw std::runtime_error("rill: hwloc_topology_load failed");
  bitmap allowed(hwloc_bitmap_alloc());
  if (hwloc_get_cpubind(raw, allowed.get(), HWLOC_CPUBIND_PROCESS) != 0 || hwloc_bitmap_iszero(allowed.get()))
    hwloc_bitmap_copy(allowed.get(), hwloc_topology_get_topology_cpuset(raw));
  const bool whole_node = hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(raw), allowed.get());

  // The cores with a processor this process may use, each as those of its processors it may use.
  std::vector<std::vector<int>> cores;
  const hwloc_obj_type_t unit = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  bitmap mine(hwloc_bitmap_alloc());
  for (hwloc_obj_t o = hwloc_get_next_obj_by_type(raw, unit, nullptr); o;
       o = hwloc_get_next_obj_by_type(raw, unit, o)) {
    hwloc_bitmap_and(mine.get(), o->cpuset, allowed.get());
    if (!hwloc_bitmap_iszero(mine.get())) cores.push_back(processors_of(mine.get()));
  }
  if (cores.empty()) cores.push_back(processors_of(allowed.get()));

  const int first = whole_node ? node_index * ranks_here * workers : 0;
  std::vector<std::vector<std::vector<int>>> out(static_cast<std::size_t>(ranks_here));
  for (int r = 0; r < ranks_here; ++r)
    for (int w = 0; w < workers; ++w)
      out[static_cast<std::size_t>(r)].push_back(
          cores[static_cast<std::size_t>(first + r * workers + w) % cores.size()]);
  return out;
}

}  // namespace rill::detail
