// --rill:stats: the counters of this process's ranks as one table, a column per rank.
#pragma once

#include <string>
#include <vector>

#include "rill/runtime.hpp"

namespace rill::detail {

// `counters[i]` are rank `ranks[i]`'s (rank_core::counters); every rank reports the same list.
std::string format_counters(const std::vector<int>& ranks, const std::vector<std::vector<rill::counter>>& counters);

}  // namespace rill::detail
