// The machine: its processors, its memories, and which processors reach which memories at what
// relative cost (Realm Fig. 1, lines 69-82).
//
//   const rill::machine& m = rill::machine::get();
//   for (rill::proc p : m.processors())
//     for (const auto& a : m.proc_mem_affinity(p))      // the memories p reaches directly
//       std::printf("rank %d -> memory of rank %d: bandwidth %u latency %u\n", p.rank(), a.m.owner(),
//                   a.bandwidth, a.latency);
//
// The description is gathered once at start-up (hwloc for each node's cores, NUMA domains and
// memory; the transport for which ranks share a process or a node) and is the same on every rank.
// Bandwidth and latency are relative tiers for ranking choices, not measurements: higher
// bandwidth and lower latency are better. See docs/machine.md.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "rill/proc.hpp"

namespace rill {

enum class memory_kind : std::uint8_t {
  none = 0,
  system = 1,      // a rank's system memory (DRAM of its node; with the local transport, of the process)
  registered = 2,  // a rank's registered segment: other ranks reach it one-sidedly (rill/global_ptr.hpp)
  external = 3,    // resources attached on a rank (rill/external.hpp: files): reached by copies, on its I/O threads
};

// A memory: its owner rank and its kind. Trivially copyable, valid on every rank.
class memory {
 public:
  constexpr memory() = default;
  static constexpr memory system(int rank) { return memory(rank, memory_kind::system); }
  static constexpr memory registered(int rank) { return memory(rank, memory_kind::registered); }
  static constexpr memory external(int rank) { return memory(rank, memory_kind::external); }
  int owner() const { return owner_; }
  memory_kind kind() const { return kind_; }
  bool exists() const { return kind_ != memory_kind::none; }
  friend bool operator==(const memory&, const memory&) = default;
  friend auto operator<=>(const memory&, const memory&) = default;

 private:
  constexpr memory(int rank, memory_kind k) : owner_(rank), kind_(k) {}
  std::int32_t owner_ = -1;
  memory_kind kind_ = memory_kind::none;
};
static_assert(std::is_trivially_copyable_v<memory> && sizeof(memory) == 8);

// Processor p can load and store memory m directly, with this relative bandwidth and latency.
struct proc_memory_affinity {
  proc p;
  memory m;
  std::uint32_t bandwidth;  // relative: higher is better
  std::uint32_t latency;    // relative: lower is better
};

// Data can be copied between m1 and m2 (in either direction), with this relative cost.
struct memory_memory_affinity {
  memory m1;
  memory m2;
  std::uint32_t bandwidth;
  std::uint32_t latency;
};

// One node (host) of the machine, as hwloc describes it.
struct node_info {
  std::string host;
  int cores = 0;                   // physical cores
  int pus = 0;                     // hardware threads
  int numa_domains = 0;            // NUMA nodes (at least 1)
  std::uint64_t memory_bytes = 0;  // physical memory
  std::vector<int> ranks;          // the ranks running on it, ascending
};

// The relative costs the affinity queries report, by how two ranks are related.
struct affinity_tier {
  std::uint32_t bandwidth;
  std::uint32_t latency;
};
inline constexpr affinity_tier same_process_tier{100, 1};  // one address space: direct access, memcpy
inline constexpr affinity_tier same_node_tier{50, 5};      // other process, same node: shared-memory transport
inline constexpr affinity_tier other_node_tier{10, 50};    // across the network

namespace detail {
// What every rank's registered memory is, from options every rank shares: the bytes of its
// segment that instances and rill::new_array share, and whether ranks of one node (or process) map
// each other's segments (--rill:segment, --rill:global-heap, --rill:shared-segments).
struct registered_memory_facts {
  std::uint64_t bytes = 0;
  bool shared_on_node = false;
};

struct rank_description {
  std::string host;
  std::string process;  // host and process id: ranks that share an address space share it
  int workers = 0;
  int cores = 0;
  int pus = 0;
  int bound_pus = 0;  // hardware threads the process may run on
  int numa_domains = 0;
  std::uint64_t memory_bytes = 0;
};
}  // namespace detail

class machine {
 public:
  // The machine as the calling rank sees it (the same on every rank). Call from a task or handler.
  static const machine& get();

  // Every processor (one per rank, in rank order) and every memory: each rank's system memory and
  // its registered memory, in rank order.
  const std::vector<proc>& processors() const { return procs_; }
  const std::vector<memory>& memories() const { return memories_; }

  // Which processors reach which memories directly (loads and stores); restrict to a processor
  // and/or a memory. System memory: processors of its process. Registered memory: its own rank's
  // processor, and with shared segments those of its process and of its node.
  std::vector<proc_memory_affinity> proc_mem_affinity(std::optional<proc> p = std::nullopt,
                                                      std::optional<memory> m = std::nullopt) const;
  // Which pairs of distinct memories support copies; restrict to pairs involving a and/or b.
  std::vector<memory_memory_affinity> mem_mem_affinity(std::optional<memory> a = std::nullopt,
                                                       std::optional<memory> b = std::nullopt) const;

  // The memory a processor reaches best: its own rank's system memory.
  memory local_memory(proc p) const;
  // The node a rank runs on (an index into nodes()), and the nodes.
  int node_of(int rank) const;
  const std::vector<node_info>& nodes() const { return nodes_; }
  // Whether two ranks share an address space (threads of one process: the local transport).
  bool same_process(int a, int b) const;
  // The worker threads of a processor; the bytes of a memory: for system memory its rank's share
  // of its node's, for registered memory its segment's bytes for instances and global pointers.
  int workers(proc p) const;
  std::uint64_t capacity(memory m) const;

  // For the runtime: built from every rank's description, indexed by rank.
  machine(std::vector<detail::rank_description> ranks, detail::registered_memory_facts registered);

 private:
  const detail::rank_description& rank_at(int r) const;
  affinity_tier tier(int a, int b) const;

  bool reaches(int processor_rank, memory m) const;

  std::vector<detail::rank_description> ranks_;
  detail::registered_memory_facts registered_;
  std::vector<proc> procs_;
  std::vector<memory> memories_;
  std::vector<node_info> nodes_;
  std::vector<int> node_of_;
};

}  // namespace rill
