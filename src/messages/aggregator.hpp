// Per-destination aggregation of active messages (Grappa §2.4).
//
// Each destination has one buffer, shared by the rank's workers under a short spin lock. A buffer
// leaves when it reaches the size threshold, when its oldest message is older than the age
// threshold (checked at network progress), when the workers go idle, or on flush(). Payloads above
// the large threshold never enter a buffer: they are framed in one of their own and sent at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/spinlock.hpp"
#include "messages/buffer_sink.hpp"
#include "messages/wire_format.hpp"
#include "rill/config.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

class aggregator {
 public:
  // Finished buffers go to `sink`: first as a copy (then the aggregator keeps its buffer and no
  // new one is made), else as the buffer itself.
  aggregator(int self, int ranks, const rill::config& cfg, buffer_sink& sink);

  // Reserves room for one message to `dest` and returns where its payload goes; the destination
  // stays locked until commit(dest). `id` may carry the control bit.
  std::byte* reserve(int dest, std::uint16_t id, std::size_t bytes);
  // Between reserve and commit: the message is a runtime control message, which delivery audits
  // do not count (counted here, once, rather than tested on every message's way).
  void mark_control(int dest);
  void commit(int dest);

  void flush(int dest);
  void flush_all();
  void flush_aged(std::uint64_t now_ns);
  bool any_buffered() const { return buffered_.load(std::memory_order_acquire) != 0; }
  // The sequence of the next message to `dest` sent in a buffer of its own (wire::frame_single).
  std::uint32_t take_single_sequence(int dest) {
    return wire::single_sequence_bit |
           single_sequences_[static_cast<std::size_t>(dest)].fetch_add(1, std::memory_order_relaxed);
  }

 private:
  struct alignas(64) queue {
    spinlock lock;
    // buf is kept at its full size so that appending a message does not zero-fill its bytes
    // (vector::resize would, one memset call per message); `used` is how much of it is written.
    buffer buf;
    std::size_t used = 0;             // <= wire::buffer_header_bytes: no message yet
    std::uint64_t first_ns = 0;       // when a progress point first saw the buffer (0: not yet)
    std::uint32_t next_sequence = 0;  // of the next message reserved (wire_format.hpp)
    std::uint32_t control = 0;        // control messages in buf (the rest are counted as sent)
    std::atomic<bool> nonempty{false};
  };
  buffer take_locked(queue& q);
  // Sends q's buffer to dest and unlocks q.
  void leave_locked(queue& q, int dest);

  const int self_;
  const std::size_t threshold_;
  const std::size_t large_;
  const std::uint64_t age_ns_;
  buffer_sink& sink_;
  std::unique_ptr<queue[]> queues_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> single_sequences_;
  const int ranks_;
  std::atomic<int> buffered_{0};  // destinations whose buffer holds messages
};

}  // namespace rill::detail
