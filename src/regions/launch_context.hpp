// What the analysis knows for one issuer of launches: the top level of a rank (every launch made
// outside a launched task), or the body of one launched task, whose launches are its
// sub-launches. Each has its own state per region tree: a sub-launch is ordered only with its
// siblings, and starts from the data its parent's instances hold.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "regions/launch_memo.hpp"
#include "regions/region_state.hpp"
#include "rill/event.hpp"
#include "rill/field_space.hpp"
#include "rill/launch.hpp"

namespace rill::detail {

struct launch_context {
  std::unordered_map<std::uint64_t, tree_state> trees;  // by root id
  const launched_body* parent = nullptr;                // null: the rank's top level
  std::vector<event> children;                          // the sub-launches' events, merged now and then
  launch_memos memos;                                   // its launches' analyses, to be repeated
};

// Notes a sub-launch's event (a long-running parent's list stays short).
inline void note_child(launch_context& ctx, event done) { add_merged(ctx.children, done, 64); }

// physical_region::field_bits of `fields` (sorted) in field space `space`.
inline std::uint64_t field_bits(const field_space& space, std::span<const field_id> fields) {
  std::uint64_t bits = 0;
  const auto& all = space.fields();
  for (field_id f : fields) {
    const auto at =
        std::lower_bound(all.begin(), all.end(), f, [](const field_info& i, field_id id) { return i.id < id; });
    const auto ordinal = static_cast<std::size_t>(at - all.begin());
    if (ordinal < 64) bits |= std::uint64_t{1} << ordinal;
  }
  return bits;
}

}  // namespace rill::detail
