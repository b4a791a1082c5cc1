// The trace flow of one message (trace/hooks.hpp): its source, destination and sequence number
// (wire_format.hpp), which the sender and the handler both know, so the arrow from a send to its
// handler costs no bytes beyond the buffer header's first sequence. Destinations are taken modulo
// 256: two messages share a flow only across that many ranks and 2^32 messages per pair.
#pragma once

#include <cstdint>

#include "trace/hooks.hpp"

namespace rill::detail {

inline std::uint64_t message_flow(int source, int dest, std::uint32_t sequence) {
  return trace::message_flow(source, (static_cast<std::uint64_t>(dest) & 0xff) << 32 | sequence);
}

}  // namespace rill::detail
