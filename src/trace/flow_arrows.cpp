// See flow_arrows.hpp.
#include "trace/flow_arrows.hpp"

#include <algorithm>
#include <tuple>

namespace rill::detail::trace {

std::vector<arrow_end> pair_flows(std::vector<flow_endpoint> endpoints) {
  const auto starts = [](const flow_endpoint& e) { return info(e.what).flow == flow_role::starts; };
  // Per flow id: its starts first, then its ends, each in location order.
  std::sort(endpoints.begin(), endpoints.end(), [&](const flow_endpoint& a, const flow_endpoint& b) {
    return std::tuple(a.flow, !starts(a), a.at) < std::tuple(b.flow, !starts(b), b.at);
  });

  std::vector<arrow_end> arrows;
  std::uint64_t next_arrow = 1;
  for (auto group = endpoints.begin(); group != endpoints.end();) {
    const auto group_end =
        std::find_if(group, endpoints.end(), [&](const flow_endpoint& e) { return e.flow != group->flow; });
    if (starts(*group)) {
      const auto first_end = std::find_if_not(group, group_end, starts);
      for (auto end = first_end; end != group_end; ++end) {
        arrows.push_back({group->at, next_arrow, group->what, true});
        arrows.push_back({end->at, next_arrow, group->what, false});
        ++next_arrow;
      }
    }
    group = group_end;
  }
  std::sort(arrows.begin(), arrows.end(),
            [](const arrow_end& a, const arrow_end& b) { return std::tie(a.at, a.arrow) < std::tie(b.at, b.arrow); });
  return arrows;
}

std::span<const arrow_end> arrows_of_lane(std::span<const arrow_end> arrows, std::uint32_t rank, std::uint32_t lane) {
  const auto key = [](const arrow_end& a) { return std::pair(a.at.rank, a.at.lane); };
  const auto first = std::partition_point(arrows.begin(), arrows.end(),
                                          [&](const arrow_end& a) { return key(a) < std::pair(rank, lane); });
  const auto last =
      std::partition_point(first, arrows.end(), [&](const arrow_end& a) { return key(a) == std::pair(rank, lane); });
  return {first, last};
}

}  // namespace rill::detail::trace
