// Aggregation of active messages (Grappa §2.4), per destination rank on this rank's node and per
// destination node beyond it (hierarchical, Grappa §4.1: messages/node_routes.hpp).
//
// Each queue has one buffer, shared by the rank's workers under a short spin lock. A buffer leaves
// when it reaches the size threshold, when its oldest message is older than the age threshold
// (checked at network progress), when the workers go idle, or on flush(). Payloads above the large
// threshold never enter a buffer: they are framed in one of their own and sent at once. A node's
// buffer is an ordinary one while its messages are for one rank, and goes to that rank; it becomes
// routed (messages/routed_wire.hpp) when a message for a second rank of the node joins it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/spinlock.hpp"
#include "messages/buffer_sink.hpp"
#include "messages/node_routes.hpp"
#include "messages/wire_format.hpp"
#include "rill/config.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class aggregator {
 public:
  // Finished buffers go to `sink`: first as a copy (then the aggregator keeps its buffer and no
  // new one is made), else as the buffer itself.
  aggregator(int self, int ranks, const rill::config& cfg, buffer_sink& sink);

  // Reserves room for one message to `dest` and returns where its payload goes; the destination's
  // queue stays locked until commit(dest). `id` may carry the control bit.
  std::byte* reserve(int dest, std::uint16_t id, std::size_t bytes);
  // Between reserve and commit: the message is a runtime control message, which delivery audits
  // do not count (counted here, once, rather than tested on every message's way).
  void mark_control(int dest);
  void commit(int dest);

  // Sends what is buffered for dest (with the rest of its node's buffer, beyond this node).
  void flush(int dest) { flush_route(route_of(dest)); }
  void flush_all();
  void flush_aged(std::uint64_t now_ns);
  bool any_buffered() const { return buffered_.load(std::memory_order_acquire) != 0; }
  // The sequence of the next message to `dest` sent in a buffer of its own (wire::frame_single).
  std::uint32_t take_single_sequence(int dest) {
    return wire::single_sequence_bit |
           single_sequences_[static_cast<std::size_t>(dest)].fetch_add(1, std::memory_order_relaxed);
  }
  const node_routes& routes() const { return routes_; }
  // Queues that have held a buffer so far (at most ranks-per-node + nodes), and the bytes of the
  // buffers the queues keep now: the aggregation memory of this rank.
  int queues_used() const { return queues_used_.load(std::memory_order_relaxed); }
  std::size_t buffer_bytes() const;
  // Routed buffers sent (for several ranks of another node).
  std::uint64_t routed_sent() const { return routed_sent_.load(std::memory_order_relaxed); }

 private:
  // Messages of a routed buffer for one rank of the destination node.
  struct share {
    std::uint32_t messages = 0;
    std::uint32_t control = 0;
  };
  struct alignas(64) queue {
    spinlock lock;
    // buf is kept at its full size so that appending a message does not zero-fill its bytes
    // (vector::resize would, one memset call per message); `used` is how much of it is written.
    buffer buf;
    std::size_t used = 0;        // <= wire::buffer_header_bytes: no message yet
    std::uint64_t first_ns = 0;  // when a progress point first saw the buffer (0: not yet)
    std::uint32_t control = 0;   // control messages in buf (the rest are counted as sent)
    int dest = -1;               // the rank buf's messages are for, while it is not routed
    bool routed = false;         // buf holds messages for several ranks of a node
    bool ever_used = false;
    std::uint16_t last_to = 0;       // routed: the destination index of the latest message
    std::vector<share> shares;       // routed: by destination index (sized on first use)
    std::vector<std::uint16_t> tos;  // routed: the destination indexes with a message in buf
    std::atomic<bool> nonempty{false};
  };
  // dest's queue, from a table: node_routes divides, and this runs for every message.
  int route_of(int dest) const { return route_of_[static_cast<std::size_t>(dest)]; }
  void flush_route(int route);
  // Starts q's buffer with messages for dest.
  void begin_locked(queue& q, int dest, std::size_t first_message_bytes);
  // q's buffer gets messages for a second rank of its node: rewrites it as a routed buffer.
  void route_locked(queue& q, int route);
  buffer take_locked(queue& q);
  // Sends q's buffer and unlocks q.
  void leave_locked(queue& q, int route);
  // Sends q's buffer to `to`, counting `application` messages as handed to it, and unlocks q.
  void send_locked(queue& q, int to, std::uint32_t application);

  const int self_;
  const node_routes routes_;
  const std::size_t threshold_;
  const std::size_t large_;
  const std::uint64_t age_ns_;
  buffer_sink& sink_;
  std::unique_ptr<queue[]> queues_;  // by route (node_routes::route_of)
  std::unique_ptr<int[]> route_of_;  // by destination rank
  // Per destination rank: the sequence of its next aggregated message (under its queue's lock).
  std::unique_ptr<std::uint32_t[]> sequences_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> single_sequences_;
  std::atomic<int> buffered_{0};  // queues whose buffer holds messages
  std::atomic<int> queues_used_{0};
  std::atomic<std::uint64_t> routed_sent_{0};
};

}  // namespace rill::detail
