// Where finished aggregation buffers go: the back-pressure interface between the aggregator and
// the endpoint (implemented by messages/outbox.hpp), so that the aggregator never calls up into a
// rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/transport.hpp"

namespace rill::detail {

class buffer_sink {
 public:
  // Hands a finished buffer, holding `application` messages that are not control messages, to the
  // transport, waiting (a task yields its worker) while `dest` is full. May make network progress,
  // and so run handlers that send: never call it with a destination locked.
  virtual void transmit(int dest, buffer&& b, std::uint32_t application) = 0;
  // Sends a copy of `bytes` at once if the transport can (endpoint::try_send_copy, a node ring);
  // false otherwise, and then the caller transmits the buffer itself.
  virtual bool transmit_copy(int dest, std::span<const std::byte> bytes, std::uint32_t application) = 0;
  // Counts `application` messages as handed to `dest` that a routed buffer carries through another
  // rank of dest's node (transmitted with an application count of 0).
  virtual void count_handed(int dest, std::uint32_t application) = 0;

 protected:
  ~buffer_sink() = default;
};

}  // namespace rill::detail
