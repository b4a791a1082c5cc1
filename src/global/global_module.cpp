#include "global/global_module.hpp"

namespace rill::detail {

void global_module::set_segments(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes,
                                 std::shared_ptr<const segment_directory> d) {
  segment_ = std::make_unique<segment>(memory, bytes, global_heap_bytes);
  own_view_ = segment_->view();
  segments_ = std::move(d);
  global_heap_bases_.clear();
  for (const segment_view& v : segments_->by_rank)
    global_heap_bases_.push_back(v.owner_base() + v.size() - global_heap_bytes);
  if (id_ == 0) global_heap_ = std::make_unique<symmetric_heap>(global_heap_bytes);
}

void global_module::report_counters(counter_report& out) {
  const rill::gas_stats s = gas_.stats();
  out.add("gas_cache_hits", s.cache_hits);
  out.add("gas_cache_misses", s.cache_misses);
  out.add("gas_cache_evictions", s.cache_evictions);
  out.add("gas_cache_entries", s.cache_entries);
  out.add("gas_forwarded", s.forwarded);
  out.add("gas_parked", s.parked);
  out.add("gas_moved_in", s.moved_in);
  out.add("gas_moved_out", s.moved_out);
  out.add("gas_blocks_held", s.blocks_held);
}

}  // namespace rill::detail
