// The trace flow of one message (trace/hooks.hpp): its source, destination and sequence number
// (wire_format.hpp), which the sender and the handler both know, so the arrow from a send to its
// handler costs no bytes beyond the buffer header's first sequence. Destinations are taken modulo
// 256: two messages share a flow only across that many ranks and 2^32 messages per pair.
#pragma once

#include <cstdint>

#include "messages/wire_format.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {

inline std::uint64_t message_flow(int source, int dest, std::uint32_t sequence) {
  return trace::message_flow(source, (static_cast<std::uint64_t>(dest) & 0xff) << 32 | sequence);
}

// The flow of a message with handler id `id`, or none for a runtime control message: those are sent
// from idle workers (termination probes, steal requests), outside any task, where a viewer has no
// slice to start an arrow from.
inline std::uint64_t traced_flow(int source, int dest, std::uint32_t sequence, std::uint16_t id) {
  return (id & wire::control_bit) ? 0 : message_flow(source, dest, sequence);
}

}  // namespace rill::detail
