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

}  // namespace rill::detail
