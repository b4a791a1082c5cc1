// Sending whole buffers from one rank: the back-pressure between the rank's senders (the
// aggregator, large messages) and its endpoint.
#pragma once

#include <span>

#include "messages/buffer_sink.hpp"
#include "scheduler/worker_pool.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class outbox final : public buffer_sink {
 public:
  outbox(endpoint& ep, worker_pool& pool) : ep_(ep), pool_(pool) {}

  // buffer_sink: waits for room (a worker of this rank makes progress meanwhile), counts the send.
  void transmit(int dest, buffer&& b) override;
  bool transmit_copy(int dest, std::span<const std::byte> bytes) override;
  // Sends a buffer with lent parts (endpoint::try_send_lent), waiting for room like transmit.
  void transmit_lent(int dest, lent_buffer b);
  // A recycled buffer of at least `bytes` capacity from the endpoint, or an empty one.
  buffer spare_buffer(std::size_t bytes) { return ep_.spare(bytes); }

 private:
  // Calls try_send() until it succeeds (the endpoint has room), then counts `bytes` as sent.
  template <class TrySend>
  void send_when_room(std::size_t bytes, TrySend try_send);

  endpoint& ep_;
  worker_pool& pool_;
};

}  // namespace rill::detail
