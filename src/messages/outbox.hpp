// Sending whole buffers from one rank: the back-pressure between the rank's senders (the
// aggregator, large messages) and its endpoint.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>

#include "messages/buffer_sink.hpp"
#include "messages/delivery_counts.hpp"
#include "scheduler/worker_pool.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class outbox final : public buffer_sink {
 public:
  outbox(endpoint& ep, worker_pool& pool, delivery_counts& counts) : ep_(ep), pool_(pool), counts_(counts) {}

  // buffer_sink: waits for room (a worker of this rank makes progress meanwhile), counts the send.
  void transmit(int dest, buffer&& b, std::uint32_t application) override;
  bool transmit_copy(int dest, std::span<const std::byte> bytes, std::uint32_t application) override;
  void count_handed(int dest, std::uint32_t application) override { counts_.add_handed(dest, application); }
  // Sends a buffer with lent parts (endpoint::try_send_lent) holding one application message,
  // waiting for room like transmit.
  void transmit_lent(int dest, lent_buffer b);
  // Called now and then while a send waits for room to `dest`, with when it began waiting (a
  // destination that stopped answering fills its queue: core/delivery_audit.hpp).
  using long_wait_fn = std::function<void(int dest, std::uint64_t since_ns)>;
  void on_long_wait(long_wait_fn f) { long_wait_ = std::move(f); }
  // A recycled buffer of at least `bytes` capacity from the endpoint, or an empty one.
  buffer spare_buffer(std::size_t bytes) { return ep_.spare(bytes); }
  // Tries to send that the endpoint refused for want of room (each then waited: back-pressure).
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  // Calls try_send() until it succeeds (the endpoint has room), then counts the buffer as sent.
  template <class TrySend>
  void send_when_room(int dest, std::uint32_t application, std::size_t bytes, TrySend try_send);
  void count_sent(int dest, std::uint32_t application, std::size_t bytes);

  endpoint& ep_;
  worker_pool& pool_;
  delivery_counts& counts_;
  long_wait_fn long_wait_;
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace rill::detail
