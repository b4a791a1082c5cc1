// rill::machine: each process describes its node with hwloc, the transport gathers every rank's
// description at start-up, and every rank builds the same model from them.
#include "machine/machine.hpp"

#include <fmt/format.h>
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "machine/machine_module.hpp"
#include "machine/node_topology.hpp"
#include "rill/error.hpp"
#include "transport/transport.hpp"

namespace rill {

namespace detail {

namespace {

int count_of(hwloc_topology_t topo, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(topo, type);
  return n < 0 ? 0 : n;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

rank_description describe_this_process(int workers) {
  rank_description d;
  d.host = host_name();
  d.process = fmt::format("{}:{}", d.host, static_cast<long>(getpid()));
  d.workers = workers;
  const node_topology node;
  hwloc_topology_t topo = node.get();
  d.cores = std::max(1, count_of(topo, HWLOC_OBJ_CORE));
  d.pus = std::max(d.cores, count_of(topo, HWLOC_OBJ_PU));
  d.numa_domains = std::max(1, count_of(topo, HWLOC_OBJ_NUMANODE));
  d.memory_bytes = hwloc_get_root_obj(topo)->total_memory;
  d.bound_pus = std::max(1, hwloc_bitmap_weight(node.allowed()));
  return d;
}

// One line per field; host names and process keys hold no newlines.
std::string encode(const rank_description& d) {
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n", d.host, d.process, d.workers, d.cores, d.pus, d.bound_pus,
                     d.numa_domains, d.memory_bytes);
}

rank_description decode(const std::string& s, int rank) {
  std::istringstream in(s);
  rank_description d;
  std::getline(in, d.host);
  std::getline(in, d.process);
  in >> d.workers >> d.cores >> d.pus >> d.bound_pus >> d.numa_domains >> d.memory_bytes;
  if (!in) throw std::runtime_error(fmt::format("rill: rank {} sent a malformed machine description", rank));
  return d;
}

std::shared_ptr<const rill::machine> build_machine(transport& t, int workers, registered_memory_facts registered) {
  const auto all = t.gather_from_all_ranks(encode(describe_this_process(workers)));
  std::vector<rank_description> ranks;
  ranks.reserve(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) ranks.push_back(decode(all[r], static_cast<int>(r)));
  return std::make_shared<const rill::machine>(std::move(ranks), registered);
}

}  // namespace detail

machine::machine(std::vector<detail::rank_description> ranks, detail::registered_memory_facts registered)
    : ranks_(std::move(ranks)), registered_(registered) {
  const int n = static_cast<int>(ranks_.size());
  for (int r = 0; r < n; ++r) {
    procs_.emplace_back(r);
    memories_.push_back(memory::system(r));
    memories_.push_back(memory::registered(r));
    const auto& d = ranks_[static_cast<std::size_t>(r)];
    auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const node_info& x) { return x.host == d.host; });
    if (it == nodes_.end()) {
      nodes_.push_back(node_info{d.host, d.cores, d.pus, d.numa_domains, d.memory_bytes, {}});
      it = std::prev(nodes_.end());
    }
    it->ranks.push_back(r);
    node_of_.push_back(static_cast<int>(it - nodes_.begin()));
  }
}

const machine& machine::get() { return detail::current_module<detail::machine_module>("rill::machine::get").model(); }

const detail::rank_description& machine::rank_at(int r) const {
  if (r < 0 || r >= static_cast<int>(ranks_.size())) {
    throw misuse_error(fmt::format("rill::machine: no rank {} (ranks 0..{})", r, static_cast<int>(ranks_.size()) - 1));
  }
  return ranks_[static_cast<std::size_t>(r)];
}

int machine::node_of(int rank) const {
  (void)rank_at(rank);
  return node_of_[static_cast<std::size_t>(rank)];
}

bool machine::same_process(int a, int b) const { return rank_at(a).process == rank_at(b).process; }

affinity_tier machine::tier(int a, int b) const {
  if (same_process(a, b)) return same_process_tier;
  if (node_of(a) == node_of(b)) return same_node_tier;
  return other_node_tier;
}

bool machine::reaches(int processor_rank, memory m) const {
  if (m.kind() == memory_kind::system) return same_process(processor_rank, m.owner());
  // A segment is mapped by its own rank, and with shared segments by the others of its node.
  return processor_rank == m.owner() || (registered_.shared_on_node && node_of(processor_rank) == node_of(m.owner()));
}

std::vector<proc_memory_affinity> machine::proc_mem_affinity(std::optional<proc> p, std::optional<memory> m) const {
  std::vector<proc_memory_affinity> out;
  for (const proc& q : procs_) {
    if (p && *p != q) continue;
    for (const memory& mem : memories_) {
      if (m && *m != mem) continue;
      if (!reaches(q.rank(), mem)) continue;
      const affinity_tier t = tier(q.rank(), mem.owner());
      out.push_back({q, mem, t.bandwidth, t.latency});
    }
  }
  return out;
}

std::vector<memory_memory_affinity> machine::mem_mem_affinity(std::optional<memory> a, std::optional<memory> b) const {
  std::vector<memory_memory_affinity> out;
  for (std::size_t i = 0; i < memories_.size(); ++i) {
    for (std::size_t j = i + 1; j < memories_.size(); ++j) {
      const memory& x = memories_[i];
      const memory& y = memories_[j];
      // Restrictions name either end of the pair.
      if (a && *a != x && *a != y) continue;
      if (b && *b != x && *b != y) continue;
      if (a && b && !((*a == x && *b == y) || (*a == y && *b == x))) continue;
      // The transport copies between any two ranks.
      const affinity_tier t = tier(x.owner(), y.owner());
      out.push_back({x, y, t.bandwidth, t.latency});
    }
  }
  return out;
}

memory machine::local_memory(proc p) const {
  (void)rank_at(p.rank());
  return memory::system(p.rank());
}

int machine::workers(proc p) const { return rank_at(p.rank()).workers; }

std::uint64_t machine::capacity(memory m) const {
  if (!m.exists()) throw misuse_error("rill::machine::capacity: no memory (a default-constructed handle)");
  if (m.kind() == memory_kind::registered) {
    (void)rank_at(m.owner());
    return registered_.bytes;
  }
  const node_info& node = nodes_[static_cast<std::size_t>(node_of(m.owner()))];
  return node.memory_bytes / node.ranks.size();
}

}  // namespace rill
