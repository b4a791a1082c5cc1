#include "messages/aggregator.hpp"

#include "messages/message_flow.hpp"
#include "messages/routed_wire.hpp"
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
      routes_(self, ranks, cfg.ranks_per_node),
      threshold_(cfg.agg_bytes),
      large_(cfg.large_bytes),
      age_ns_(cfg.agg_age_us * 1000),
      sink_(sink),
      queues_(new queue[static_cast<std::size_t>(routes_.routes())]),
      route_of_(new int[static_cast<std::size_t>(ranks)]),
      sequences_(new std::uint32_t[static_cast<std::size_t>(ranks)]()),
      single_sequences_(new std::atomic<std::uint32_t>[static_cast<std::size_t>(ranks)]()) {
  for (int d = 0; d < ranks; ++d) route_of_[static_cast<std::size_t>(d)] = routes_.route_of(d);
}

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
  const int route = route_of(dest);
  queue& q = queues_[static_cast<std::size_t>(route)];
  const std::size_t plain = wire::message_header_bytes(bytes) + bytes;
  for (;;) {
    q.lock.lock();
    if (q.used > wire::buffer_header_bytes) {
      if (!q.routed && q.dest != dest) {
        // A second rank of that node: the buffer becomes routed, if that leaves room for this message.
        if (q.used + routed_growth(wire::message_count(q.buf.data())) + wire::routed_message_bytes(bytes, true) >
            threshold_) {
          leave_locked(q, route);
          continue;
        }
        route_locked(q, route);
      }
      const std::size_t need =
          q.routed ? wire::routed_message_bytes(bytes, q.shares[routes_.local_index(dest)].messages == 0) : plain;
      if (q.used + need > threshold_) {
        // This message would overfill the buffer: send what is there first.
        leave_locked(q, route);
        continue;
      }
    } else {
      begin_locked(q, dest, plain);
    }
    const std::uint32_t sequence = sequences_[static_cast<std::size_t>(dest)]++;
    std::byte* payload;
    if (q.routed) {
      const auto to = static_cast<std::uint16_t>(routes_.local_index(dest));
      share& sh = q.shares[to];
      const bool first = sh.messages++ == 0;
      if (first) q.tos.push_back(to);
      q.last_to = to;
      payload = wire::write_routed_message_header(q.buf.data(), q.used, to, first, sequence, id, bytes);
      q.used += wire::routed_message_bytes(bytes, first);
    } else {
      payload = wire::write_message_header(q.buf.data(), q.used, id, bytes);
      q.used += plain;
    }
    if (trace::enabled()) [[unlikely]]
      trace::instant<trace::kind::message_send>(traced_flow(self_, dest, sequence, id),
                                                static_cast<std::uint64_t>(dest), bytes);
    return payload;
  }
}

void aggregator::begin_locked(queue& q, int dest, std::size_t first_message_bytes) {
  // Zero-filled once per buffer, not per message.
  const std::size_t room = std::max(threshold_ + 64, wire::buffer_header_bytes + first_message_bytes);
  if (q.buf.size() < room) q.buf.resize(room);
  wire::write_buffer_header(q.buf.data(), static_cast<std::uint32_t>(self_),
                            sequences_[static_cast<std::size_t>(dest)]);
  q.used = wire::buffer_header_bytes;
  // Stamped by the first flush_aged() that sees the buffer, not here: a clock read per new buffer
  // is latency on every lone message, and progress points come often.
  q.first_ns = 0;
  q.control = 0;
  q.dest = dest;
  q.routed = false;
  if (!q.ever_used) {
    q.ever_used = true;
    queues_used_.fetch_add(1, std::memory_order_relaxed);
  }
  q.nonempty.store(true, std::memory_order_release);
  buffered_.fetch_add(1, std::memory_order_acq_rel);
}

void aggregator::route_locked(queue& q, int route) {
  const auto to = static_cast<std::uint16_t>(routes_.local_index(q.dest));
  const std::uint32_t messages = wire::message_count(q.buf.data());
  q.used = convert_to_routed(q.buf.data(), q.used, to, static_cast<std::uint32_t>(routes_.node_of_route(route)));
  q.routed = true;
  if (q.shares.empty()) q.shares.resize(static_cast<std::size_t>(routes_.ranks_per_node()));
  q.shares[to] = share{messages, q.control};
  q.tos.assign(1, to);
  q.last_to = to;
}

void aggregator::mark_control(int dest) {
  if (pending_large_dest == dest && !pending_large.empty()) {
    pending_large_application = 0;
    return;
  }
  queue& q = queues_[static_cast<std::size_t>(route_of(dest))];
  if (q.routed)
    ++q.shares[q.last_to].control;
  else
    ++q.control;
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
  const int route = route_of(dest);
  queue& q = queues_[static_cast<std::size_t>(route)];
  if (q.used >= threshold_) {
    leave_locked(q, route);
    return;
  }
  q.lock.unlock();
}

void aggregator::leave_locked(queue& q, int route) {
  if (!q.routed) {
    const int dest = q.dest;
    trace::instant<trace::kind::buffer_flush>(0, static_cast<std::uint64_t>(dest), q.used);
    send_locked(q, dest, wire::message_count(q.buf.data()) - q.control);
    return;
  }
  const int node = routes_.node_of_route(route);
  const int via = routes_.peer_on(node);
  trace::instant<trace::kind::buffer_flush>(0, static_cast<std::uint64_t>(via), q.used);
  // Delivery audits count each destination's messages as handed to it by this rank, once the
  // buffer is with the transport (the forwarder counts none of them).
  std::vector<std::pair<int, std::uint32_t>> handed;
  handed.reserve(q.tos.size());
  for (const std::uint16_t to : q.tos) {
    share& sh = q.shares[to];
    handed.emplace_back(routes_.rank_at(node, to), sh.messages - sh.control);
    sh = share{};
  }
  q.tos.clear();
  q.routed = false;
  routed_sent_.fetch_add(1, std::memory_order_relaxed);
  send_locked(q, via, 0);
  for (const auto& [dest, application] : handed) sink_.count_handed(dest, application);
}

void aggregator::send_locked(queue& q, int to, std::uint32_t application) {
  if (sink_.transmit_copy(to, std::span<const std::byte>(q.buf.data(), q.used), application)) {
    q.nonempty.store(false, std::memory_order_release);
    buffered_.fetch_sub(1, std::memory_order_acq_rel);
    q.used = 0;
    q.lock.unlock();
    return;
  }
  buffer full = take_locked(q);
  q.lock.unlock();
  sink_.transmit(to, std::move(full), application);
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

void aggregator::flush_route(int route) {
  queue& q = queues_[static_cast<std::size_t>(route)];
  if (!q.nonempty.load(std::memory_order_acquire)) return;
  q.lock.lock();
  if (q.used <= wire::buffer_header_bytes) {
    q.lock.unlock();
    return;
  }
  leave_locked(q, route);
}

void aggregator::flush_all() {
  if (!any_buffered()) return;
  for (int r = 0; r < routes_.routes(); ++r) flush_route(r);
}

void aggregator::flush_aged(std::uint64_t now) {
  if (!any_buffered()) return;
  for (int r = 0; r < routes_.routes(); ++r) {
    queue& q = queues_[static_cast<std::size_t>(r)];
    if (!q.nonempty.load(std::memory_order_acquire)) continue;
    q.lock.lock();
    // `now` may predate a buffer another thread started meanwhile: unsigned subtraction would wrap.
    if (q.used > wire::buffer_header_bytes && q.first_ns == 0) q.first_ns = now;
    const bool aged = q.used > wire::buffer_header_bytes && now >= q.first_ns && now - q.first_ns >= age_ns_;
    q.lock.unlock();
    if (aged) flush_route(r);
  }
}

std::size_t aggregator::buffer_bytes() const {
  std::size_t bytes = 0;
  for (int r = 0; r < routes_.routes(); ++r) {
    queue& q = queues_[static_cast<std::size_t>(r)];
    q.lock.lock();
    bytes += q.buf.capacity();
    q.lock.unlock();
  }
  return bytes;
}

}  // namespace rill::detail
