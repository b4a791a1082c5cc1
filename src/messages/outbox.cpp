#include "messages/outbox.hpp"

#include <thread>

#include "common/clock.hpp"

namespace rill::detail {

void outbox::count_sent(int dest, std::uint32_t application, std::size_t bytes) {
  counts_.add_handed(dest, application);
  if (worker* w = current_worker()) {
    worker_counters::bump(w->counters().buffers_sent);
    worker_counters::bump(w->counters().bytes_sent, bytes);
  }
}

template <class TrySend>
void outbox::send_when_room(int dest, std::uint32_t application, std::size_t bytes, TrySend try_send) {
  std::uint32_t tries = 0;
  std::uint64_t since = 0;
  const std::atomic<std::uint64_t>* const room = ep_.room();
  for (;;) {
    const std::uint64_t seen = room ? room->load(std::memory_order_seq_cst) : 0;  // (before the try)
    if (try_send()) break;
    refused_.fetch_add(1, std::memory_order_relaxed);
    // (A wait for room is one try every few milliseconds at most: report each.)
    if (long_wait_ && (room || ++tries % 256 == 0)) {
      if (since == 0) since = steady_now_ns();
      long_wait_(dest, since);
    }
    // Back-pressure: the destination's queue is full. This fiber waits while the worker polls
    // (draining our own inbox, so that a peer blocked on us can move) and runs other work -- where
    // the endpoint says when there is room, until there is (worker::wait_for_room).
    if (worker* w = current_worker(); w && &w->pool() == &pool_) {
      if (room)
        w->wait_for_room(*room, seen);
      else
        w->wait_for_progress();
    } else {
      std::this_thread::yield();
    }
  }
  count_sent(dest, application, bytes);
}

void outbox::transmit(int dest, buffer&& b, std::uint32_t application) {
  buffer mine = std::move(b);  // owned here before anything can yield
  const std::size_t bytes = mine.size();
  send_when_room(dest, application, bytes, [&] { return ep_.try_send(dest, mine); });
}

void outbox::transmit_lent(int dest, lent_buffer b) {
  send_when_room(dest, 1, b.size(), [&] { return ep_.try_send_lent(dest, b); });
}

bool outbox::transmit_copy(int dest, std::span<const std::byte> bytes, std::uint32_t application) {
  if (!ep_.try_send_copy(dest, bytes)) return false;
  count_sent(dest, application, bytes.size());
  return true;
}

}  // namespace rill::detail
