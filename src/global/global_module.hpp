// The global memory layer's part of a rank: its segment (the memory other ranks reach through
// global pointers), how this process sees every rank's segment, the global heap, and its part of
// the active global address space (AGAS, gas_table).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "global/gas_table.hpp"
#include "global/segment.hpp"
#include "global/symmetric_heap.hpp"
#include "rill/config.hpp"
#include "rill/detail/address_map.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/rank_modules.hpp"

namespace rill::detail {

class global_module final : public rank_module {
 public:
  global_module(int rank, int ranks, const rill::config& cfg)
      : rank_module("global"),
        id_(rank),
        size_(ranks),
        shared_segments_(cfg.shared_segments),
        every_tag_(cfg.tag_check == rill::tag_checks::every),
        gas_(rank, ranks, cfg) {}

  int id() const { return id_; }
  int size() const { return size_; }
  segment& memory_segment() { return *segment_; }
  gas_table& gas() { return gas_; }
  // Whether ranks of one process or node address each other's memory directly (--rill:shared-segments).
  bool shares_memory() const { return shared_segments_; }
  // The segment of `rank` if this rank may address it directly (its own; with --rill:shared-segments,
  // those of the other ranks this process maps), else nullptr.
  const segment_view* addressable_segment(int rank) const {
    if (rank < 0 || rank >= size_ || addressable_.empty()) return nullptr;
    const segment_view& s = addressable_[static_cast<std::size_t>(rank)];
    return s.mapped() ? &s : nullptr;
  }
  // The segments and heap bases above, and whether single-element operations through a mapped
  // segment check generation tags too (--rill:tag-checks=every), not only bounds: for the inline
  // hot paths (rill/detail/address_map.hpp); complete once set_segments has run.
  const address_map& addresses() const { return addresses_; }
  // This rank's segment over `memory`, and how this process sees every rank's; once, at start-up.
  // Rank 0 also keeps the global heap's allocator.
  void set_segments(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes, const segment_directory& d);
  // Where each rank's part of the global heap starts, in that rank's address space; by rank.
  const std::vector<std::uintptr_t>& global_heap_bases() const { return global_heap_bases_; }
  // The global heap's allocator: on rank 0, else nullptr.
  symmetric_heap* global_heap() { return global_heap_.get(); }
  void report_counters(counter_report& out) override;

 private:
  const int id_;
  const int size_;
  std::unique_ptr<segment> segment_;  // global memory homed here
  const bool shared_segments_;
  const bool every_tag_;
  std::vector<segment_view> addressable_;  // by rank; unmapped where this rank does not address it
  std::vector<gas_index> gas_indexes_;     // by rank; the index in each addressable segment
  std::vector<std::uintptr_t> global_heap_bases_;
  address_map addresses_;
  std::unique_ptr<symmetric_heap> global_heap_;
  gas_table gas_;  // this rank's part of the active global address space (rill/gas.hpp)
};

// The calling worker's rank's global module; throws rill::misuse_error naming `what` elsewhere.
inline global_module& global_here(const char* what) { return current_module<global_module>(what); }

}  // namespace rill::detail
