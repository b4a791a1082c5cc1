// Pairing flow starts with flow ends across all ranks, at merge time. One start may have several
// ends (an event trigger releases several tasks) and the viewer matches a flow's start and end by
// id, so each (start, end) pair becomes an arrow of its own with a fresh id, and the start is
// written once per arrow. Ends without a start (their start was not traced) and starts without an
// end (a message still in flight at shutdown) draw nothing.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <vector>

#include "trace/trace_kinds.hpp"

namespace rill::detail::trace {

// A record in the merged trace: its rank, its lane in that rank and its index in the lane (in
// recording order).
struct record_location {
  std::uint32_t rank;
  std::uint32_t lane;
  std::uint64_t index;
  friend auto operator<=>(const record_location&, const record_location&) = default;
};

// A record with a flow id and a role (trace_kinds.hpp: flow_role), as read from a part.
struct flow_endpoint {
  record_location at;
  std::uint64_t flow;
  kind what;
};

// One end of an arrow, at the record it binds to. Both ends carry the arrow's id and the kind of
// its start (whose category names the flow).
struct arrow_end {
  record_location at;
  std::uint64_t arrow;
  kind source;
  bool starts;
};

// The arrows' ends, sorted by location (then arrow id). If several starts share a flow id, the
// first one in location order is the flow's start and the others draw nothing.
std::vector<arrow_end> pair_flows(std::vector<flow_endpoint> endpoints);

// The ends bound to records of one lane: a sub-range of pair_flows' result.
std::span<const arrow_end> arrows_of_lane(std::span<const arrow_end> arrows, std::uint32_t rank, std::uint32_t lane);

}  // namespace rill::detail::trace
