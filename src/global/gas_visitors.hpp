// The visit words of a rank's threads (rill/detail/gas_index.hpp), in its segment, and the wait of
// an owner that freezes a block for the visits that may not have seen the frozen bit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "rill/detail/gas_index.hpp"
#include "rill/detail/segment_layout.hpp"
#include "rill/detail/segment_view.hpp"

namespace rill::detail {

// A rank's visit words, in its segment: the first line holds how many its threads have claimed.
struct gas_visitors {
  static constexpr std::size_t words = segment_layout::gas_visit_lines - 1;
  alignas(64) std::atomic<std::uint32_t> claimed;
  gas_visit_word word[words];

  // The visitors of the segment that `v` maps (nullptr if it maps none).
  static gas_visitors* in(const segment_view& v);
  // A word for the calling thread, for good; nullptr once every word is taken (the thread then
  // reaches other ranks' blocks by message).
  gas_visit_word* claim();
  // The visits of this rank's threads to other ranks' blocks so far.
  std::uint64_t elsewhere() const;
};
static_assert(sizeof(gas_visitors) == segment_layout::gas_visit_lines * 64);

// Owner, after setting a block's frozen bit: returns once every visit open now (of the threads of
// `ranks`, the visitors of every segment the owner maps) has ended. Its heavy fence pairs with the
// light one of open_visit.
void wait_for_visitors(std::span<gas_visitors* const> ranks);

}  // namespace rill::detail
