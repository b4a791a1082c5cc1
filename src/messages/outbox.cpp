#include "messages/outbox.hpp"

#include <thread>

namespace rill::detail {

template <class TrySend>
void outbox::send_when_room(std::size_t bytes, TrySend try_send) {
  while (!try_send()) {
    // Back-pressure: the destination's queue is full. This fiber waits while the worker polls
    // (draining our own inbox, so that a peer blocked on us can move) and runs other work.
    if (worker* w = current_worker(); w && &w->pool() == &pool_) {
      w->wait_for_progress();
    } else {
      std::this_thread::yield();
    }
  }
  if (worker* w = current_worker()) {
    worker_counters::bump(w->counters().buffers_sent);
    worker_counters::bump(w->counters().bytes_sent, bytes);
  }
}

void outbox::transmit(int dest, buffer&& b) {
  buffer mine = std::move(b);  // owned here before anything can yield
  send_when_room(mine.size(), [&] { return ep_.try_send(dest, mine); });
}

void outbox::transmit_lent(int dest, lent_buffer b) {
  send_when_room(b.size(), [&] { return ep_.try_send_lent(dest, b); });
}

bool outbox::transmit_copy(int dest, std::span<const std::byte> bytes) {
  if (!ep_.try_send_copy(dest, bytes)) return false;
  if (worker* w = current_worker()) {
    worker_counters::bump(w->counters().buffers_sent);
    worker_counters::bump(w->counters().bytes_sent, bytes.size());
  }
  return true;
}

}  // namespace rill::detail
