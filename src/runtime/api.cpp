// The non-template halves of the public API: they find the calling rank and call into it.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <thread>

#include "messages/wire_format.hpp"
#include "rill/am.hpp"
#include "rill/error.hpp"
#include "rill/runtime.hpp"
#include "rill/task.hpp"
#include "runtime/rank.hpp"

namespace rill::detail {

namespace {

rank_state& sending_rank(int dest) {
  rank_state& r = current_rank("rill::am::send");
  if (dest < 0 || dest >= r.size()) {
    throw rill::misuse_error(fmt::format("rill::am::send to rank {}, but the ranks are 0..{}", dest, r.size() - 1));
  }
  return r;
}

// A message's length travels as 32 bits (wire_format.hpp), and a transport may carry less (MPI
// counts an int of bytes).
std::size_t max_payload(const rank_state& r) {
  return std::min<std::size_t>(std::numeric_limits<std::uint32_t>::max(),
                               r.max_buffer_bytes() - wire::single_prefix_bytes);
}

// Larger payloads are refused before anything is counted or sent.
void check_payload_fits(const rank_state& r, std::size_t payload) {
  if (payload > max_payload(r))
    throw rill::misuse_error(
        fmt::format("rill: a message payload of {} bytes is larger than a message carries ({} bytes; see "
                    "rill::am::max_payload_bytes)",
                    payload, max_payload(r)));
}

void count_sent(std::size_t n) { worker_counters::bump(current_worker()->counters().messages_sent, n); }

}  // namespace

std::byte* am_reserve(int dest, std::uint32_t id, std::size_t bytes) {
  rank_state& r = sending_rank(dest);
  count_sent(1);
  return r.agg().reserve(dest, static_cast<std::uint16_t>(id), bytes);
}

void am_commit(int dest) { static_cast<rank_state&>(current_worker()->pool().services()).agg().commit(dest); }

void am_send_bytes(int dest, std::uint32_t id, std::vector<std::byte>&& bytes) {
  static_assert(am_payload_offset == wire::single_prefix_bytes);
  rank_state& r = sending_rank(dest);
  // Take the bytes out of the (thread-shared) scratch vector: sending may yield to another fiber.
  std::vector<std::byte> mine = std::move(bytes);
  const std::size_t payload = mine.size() - am_payload_offset;
  check_payload_fits(r, payload);
  count_sent(1);
  if (payload > r.large_bytes()) {
    wire::frame_single(mine, static_cast<std::uint32_t>(r.id()), static_cast<std::uint16_t>(id));
    const std::size_t size = mine.size();
    r.transmit(dest, std::move(mine));
    // The buffer left with the message; serialize the next one into a recycled buffer (a send that
    // completed) rather than growing a new one from nothing. Senders of large payloads tend to
    // send more of the same size.
    if (am_scratch().capacity() < size) am_scratch() = r.spare_buffer(size);
    return;
  }
  std::byte* out = r.agg().reserve(dest, static_cast<std::uint16_t>(id), payload);
  if (payload) std::memcpy(out, mine.data() + am_payload_offset, payload);
  r.agg().commit(dest);
  mine.clear();
  if (am_scratch().capacity() < mine.capacity()) am_scratch() = std::move(mine);
}

event am_send_lent(int dest, std::uint32_t id, std::vector<std::byte>&& bytes, std::vector<lent_piece>&& lent) {
  rank_state& r = sending_rank(dest);
  std::size_t lent_bytes = 0;
  for (const auto& piece : lent) lent_bytes += piece.bytes.size();
  const std::size_t payload = bytes.size() - am_payload_offset + lent_bytes;
  check_payload_fits(r, payload);
  lent_buffer b;
  b.parts.reserve(2 * lent.size() + 1);  // an owned part around every lent piece
  std::size_t from = 0;
  for (const auto& piece : lent) {
    b.parts.emplace_back(bytes.data() + from, piece.at - from);
    b.parts.push_back(piece.bytes);
    from = piece.at;
  }
  b.parts.emplace_back(bytes.data() + from, bytes.size() - from);
  if (payload <= r.large_bytes()) {  // a small message: copied into an aggregation buffer
    am_send_bytes(dest, id, b.gather());
    return event::none();
  }
  count_sent(1);
  wire::frame_single(bytes, static_cast<std::uint32_t>(r.id()), static_cast<std::uint16_t>(id), payload);
  b.owned = std::move(bytes);  // (the parts that point into it stay valid: its storage moves along)
  const user_event sent = user_event::create();
  b.done = [sent] { sent.trigger(); };
  r.transmit_lent(dest, std::move(b));
  return sent;
}

std::vector<std::byte>& am_scratch() {
  thread_local std::vector<std::byte> scratch;
  return scratch;
}

task_record* task_allocate() {
  if (worker* w = current_worker()) return w->allocate_task();
  return new task_record;
}

void task_submit(task_record* t) { current_worker()->push(t); }

bool inline_task_begin(std::size_t callable_bytes) {
  worker* w = current_worker();
  return w && w->may_run_inline(callable_bytes);
}

void inline_task_end() { current_worker()->inline_task_ran(); }

void require_worker(const char* what) { (void)current_rank(what); }

}  // namespace rill::detail

namespace rill {

int am::sender() {
  detail::worker* w = detail::current_worker();
  return w ? w->current_fiber()->message_source : -1;
}

std::size_t am::max_payload_bytes() { return detail::max_payload(detail::current_rank("rill::am::max_payload_bytes")); }

void am::flush() { detail::current_rank("rill::am::flush").agg().flush_all(); }

int rank_me() { return detail::current_rank("rill::rank_me").id(); }
int rank_n() { return detail::current_rank("rill::rank_n").size(); }
rank_stats stats() { return detail::current_rank("rill::stats").stats(); }

void yield() {
  if (detail::worker* w = detail::current_worker())
    w->yield();
  else
    std::this_thread::yield();
}

void latch::add(std::ptrdiff_t n) {
  if (count_.fetch_add(n, std::memory_order_acq_rel) == 0) {
    detail::waiter* expected = open();
    waiters_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  }
}

void latch::count_down(std::ptrdiff_t n) {
  const std::ptrdiff_t left = count_.fetch_sub(n, std::memory_order_acq_rel) - n;
  if (left > 0) return;
  if (left < 0) throw misuse_error("rill::latch::count_down below zero");
  detail::waiter* w = waiters_.exchange(open(), std::memory_order_acq_rel);
  while (w) {
    detail::waiter* next = w->next;  // read before wake: the waiter may vanish once woken
    detail::wake(w);
    w = next;
  }
}

void latch::wait() {
  if (try_wait()) return;
  detail::waiter self;
  detail::prepare_wait(self);
  detail::waiter* head = waiters_.load(std::memory_order_acquire);
  do {
    if (head == open()) return;
    self.next = head;
  } while (!waiters_.compare_exchange_weak(head, &self, std::memory_order_acq_rel, std::memory_order_acquire));
  detail::park(self);
}

}  // namespace rill
