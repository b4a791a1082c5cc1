#include "messages/aggregator.hpp"

#include "messages/message_flow.hpp"
#include "trace/hooks.hpp"

#include <algorithm>

#include "common/clock.hpp"
#include "messages/wire_format.hpp"

namespace rill::detail {

namespace {
// A large message being written between reserve() and commit() (no Rill call happens between the
// two, so no other fiber of this thread can interleave).
thread_local buffer pending_large;
thread_local int pending_large_dest = -1;
thread_local std::uint32_t pending_large_application = 0;
// Buffers up to this size are copied out when they leave (see take_locked).
constexpr std::size_t small_copy_bytes = 512;
}  // namespace

aggregator::aggregator(int self, int ranks, const rill::config& cfg, buffer_sink& sink)
    : self_(self),
      threshold_(cfg.agg_bytes),
      large_(cfg.large_bytes),
      age_ns_(cfg.agg_age_us * 1000),
      sink_(sink),
      queues_(new queue[static_cast<std::size_t>(ranks)]),
      single_sequences_(new std::atomic<std::uint32_t>[static_cast<std::size_t>(ranks)]()),
      ranks_(ranks) {}

std::byte* aggregator::reserve(int dest, std::uint16_t id, std::size_t bytes) {
  if (bytes > large_) {
    pending_large_dest = dest;
    pending_large_application = 1;
    pending_large.clear();
    pending_large.reserve(wire::buffer_header_bytes + 8 + bytes);
    const std::uint32_t sequence = take_single_sequence(dest);
    wire::begin_buffer(pending_large, static_cast<std::uint32_t>(self_), sequence);
    if (trace::enabled()) [[unlikely]]
      trace::instant<trace::kind::message_send>(traced_flow(self_, dest, sequence, id),
                                                static_cast<std::uint64_t>(dest), bytes);
    return wire::append_message(pending_large, id, bytes);
  }
  queue& q = queues_[static_cast<std::size_t>(dest)];
  for (;;) {
    q.lock.lock();
    const std::size_t need = wire::message_header_bytes(bytes) + bytes;
    if (q.used > wire::buffer_header_bytes && q.used + need > threshold_) {
      // This message would overfill the buffer: send what is there first.
      leave_locked(q, dest);
      continue;
    }
    if (q.used <= wire::buffer_header_bytes) {
      // Zero-filled once per buffer, not per message.
      const std::size_t room = std::max(threshold_ + 64, wire::buffer_header_bytes + need);
      if (q.buf.size() < room) q.buf.resize(room);
      wire::write_buffer_header(q.buf.data(), static_cast<std::uint32_t>(self_), q.next_sequence);
      q.used = wire::buffer_header_bytes;
      // Stamped by the first flush_aged() that sees the buffer, not here: a clock read per new
      // buffer is latency on every lone message, and progress points come often.
      q.first_ns = 0;
      q.control = 0;
      q.nonempty.store(true, std::memory_order_release);
      buffered_.fetch_add(1, std::memory_order_acq_rel);
    }
    std::byte* payload = wire::write_message_header(q.buf.data(), q.used, id, bytes);
    q.used += need;
    const std::uint32_t sequence = q.next_sequence++;
    if (trace::enabled()) [[unlikely]]
      trace::instant<trace::kind::message_send>(traced_flow(self_, dest, sequence, id),
                                                static_cast<std::uint64_t>(dest), bytes);
    return payload;
  }
}

void aggregator::mark_control(int dest) {
  if (pending_large_dest == dest && !pending_large.empty()) {
    pending_large_application = 0;
  } else {
    ++queues_[static_cast<std::size_t>(dest)].control;
  }
}

void aggregator::commit(int dest) {
  if (pending_large_dest == dest && !pending_large.empty()) {
    // Own the buffer before submitting: submit may yield to a fiber that reserves anew.
    buffer mine = std::move(pending_large);
    pending_large = buffer{};
    pending_large_dest = -1;
    trace::instant<trace::kind::buffer_flush>(0, static_cast<std::uint64_t>(dest), mine.size());
    sink_.transmit(dest, std::move(mine), pending_large_application);
    return;
  }
  queue& q = queues_[static_cast<std::size_t>(dest)];
  if (q.used >= threshold_) {
    leave_locked(q, dest);
    return;
  }
  q.lock.unlock();
}

void aggregator::leave_locked(queue& q, int dest) {
  trace::instant<trace::kind::buffer_flush>(0, static_cast<std::uint64_t>(dest), q.used);
  const std::uint32_t application = wire::get<std::uint32_t>(q.buf.data() + 8) - q.control;
  if (sink_.transmit_copy(dest, std::span<const std::byte>(q.buf.data(), q.used), application)) {
    q.nonempty.store(false, std::memory_order_release);
    buffered_.fetch_sub(1, std::memory_order_acq_rel);
    q.used = 0;
    q.lock.unlock();
    return;
  }
  buffer full = take_locked(q);
  q.lock.unlock();
  sink_.transmit(dest, std::move(full), application);
}

buffer aggregator::take_locked(queue& q) {
  q.nonempty.store(false, std::memory_order_release);
  buffered_.fetch_sub(1, std::memory_order_acq_rel);
  const std::size_t used = q.used;
  q.used = 0;
  if (used <= small_copy_bytes) {
    // A few messages (a lone request or reply): copy them out and keep the buffer, which is
    // cheaper than handing it over and zero-filling a new threshold-sized one for the next message.
    return buffer(q.buf.begin(), q.buf.begin() + static_cast<std::ptrdiff_t>(used));
  }
  buffer full = std::move(q.buf);
  full.resize(used);
  q.buf = buffer{};
  return full;
}

void aggregator::flush(int dest) {
  queue& q = queues_[static_cast<std::size_t>(dest)];
  if (!q.nonempty.load(std::memory_order_acquire)) return;
  q.lock.lock();
  if (q.used <= wire::buffer_header_bytes) {
    q.lock.unlock();
    return;
  }
  leave_locked(q, dest);
}

void aggregator::flush_all() {
  if (!any_buffered()) return;
  for (int d = 0; d < ranks_; ++d) flush(d);
}

void aggregator::flush_aged(std::uint64_t now) {
  if (!any_buffered()) return;
  for (int d = 0; d < ranks_; ++d) {
    queue& q = queues_[static_cast<std::size_t>(d)];
    if (!q.nonempty.load(std::memory_order_acquire)) continue;
    q.lock.lock();
    // `now` may predate a buffer another thread started meanwhile: unsigned subtraction would wrap.
    if (q.used > wire::buffer_header_bytes && q.first_ns == 0) q.first_ns = now;
    const bool aged = q.used > wire::buffer_header_bytes && now >= q.first_ns && now - q.first_ns >= age_ns_;
    q.lock.unlock();
    if (aged) flush(d);
  }
}

}  // namespace rill::detail
