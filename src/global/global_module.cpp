#include "global/global_module.hpp"

#include "rill/detail/asymmetric_fence.hpp"

namespace rill::detail {

void global_module::set_segments(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes,
                                 const segment_directory& d) {
  segment_ = std::make_unique<segment>(memory, bytes, global_heap_bytes);

  addressable_.assign(static_cast<std::size_t>(size_), segment_view{});
  global_heap_bases_.clear();
  for (int r = 0; r < size_; ++r) {
    const segment_view& v = d.by_rank[static_cast<std::size_t>(r)];
    global_heap_bases_.push_back(v.owner_base() + v.size() - global_heap_bytes);
    if (r == id_)
      addressable_[static_cast<std::size_t>(r)] = segment_->view();
    else if (shared_segments_ && v.mapped())
      addressable_[static_cast<std::size_t>(r)] = v;
  }
  gas_indexes_.clear();
  for (const segment_view& v : addressable_) gas_indexes_.push_back(gas_index::in(v));
  addresses_ = {size_,
                id_,
                every_tag_,
                addressable_.data(),
                global_heap_bases_.data(),
                gas_indexes_.data(),
                address_map::ranks_reciprocal(size_)};
  // This rank's visit words start unclaimed and even; its threads claim them on their first visit,
  // after start-up. A freeze here reads those of every rank that may visit this rank's blocks.
  gas_visitors* own = gas_visitors::in(segment_->view());
  own->claimed.store(0, std::memory_order_relaxed);
  for (gas_visit_word& w : own->word) {
    w.sequence.store(0, std::memory_order_relaxed);
    w.elsewhere.store(0, std::memory_order_relaxed);
  }
  // Before any visit: visits then open with a compiler barrier, freezes pay a membarrier.
  enable_light_fences();
  std::vector<gas_visitors*> visitors;
  for (const segment_view& v : addressable_)
    if (gas_visitors* w = gas_visitors::in(v)) visitors.push_back(w);
  gas_.set_index(gas_index::in(segment_->view()), memory, own, std::move(visitors));
  if (id_ == 0) global_heap_ = std::make_unique<symmetric_heap>(global_heap_bytes);
}

void global_module::report_counters(counter_report& out) {
  const rill::gas_stats s = gas_.stats();
  out.add("gas_cache_hits", s.cache_hits);
  out.add("gas_cache_misses", s.cache_misses);
  out.add("gas_cache_evictions", s.cache_evictions);
  out.add("gas_cache_entries", s.cache_entries);
  out.add("gas_forwarded", s.forwarded);
  out.add("gas_on_the_spot", s.on_the_spot);
  out.add("gas_parked", s.parked);
  out.add("gas_moved_in", s.moved_in);
  out.add("gas_moved_out", s.moved_out);
  out.add("gas_blocks_held", s.blocks_held);
}

}  // namespace rill::detail
