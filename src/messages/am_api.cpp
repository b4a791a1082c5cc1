// The non-template halves of rill/am.hpp: a message's reservation, commit and flush, and the
// copy-free send of a large payload.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "messages/message_flow.hpp"
#include "messages/messenger.hpp"
#include "messages/wire_format.hpp"
#include "rill/am.hpp"
#include "rill/error.hpp"
#include "scheduler/fiber.hpp"

namespace rill::detail {

namespace {
messenger& sending_messenger(int dest) {
  messenger& m = current_messenger("rill::am::send");
  m.check_destination(dest);
  return m;
}

void count_sent(std::size_t n) { worker_counters::bump(current_worker()->counters().messages_sent, n); }
}  // namespace

std::byte* am_reserve(int dest, std::uint32_t id, std::size_t bytes) {
  messenger& m = sending_messenger(dest);
  count_sent(1);
  return m.agg().reserve(dest, static_cast<std::uint16_t>(id), bytes);
}

void check_no_stack_captures(int dest, const void* bytes, std::size_t size) {
  worker* w = current_worker();
  if (w == nullptr || dest == current_messenger("rill::am::send").id()) return;
  const fiber_rec* f = w->current_fiber();
  const auto low = reinterpret_cast<std::uintptr_t>(f->stack_bottom), high = low + f->stack_size;
  if (low == 0) return;
  for (std::size_t at = 0; at + sizeof(std::uintptr_t) <= size; at += alignof(std::uintptr_t)) {
    std::uintptr_t word = 0;
    std::memcpy(&word, static_cast<const std::byte*>(bytes) + at, sizeof word);
    if (word >= low && word < high)
      throw misuse_error(fmt::format(
          "rill::am::send to rank {}: the callable holds {:#x}, an address on the sending task's stack (bytes {} to "
          "{} of the callable): a local captured by reference, or its address, means nothing on rank {} (under MPI; "
          "the local transport shares one address space and hides it); capture it by value or pass it as an "
          "argument",
          dest, word, at, at + sizeof word, dest));
  }
}

void am_check_payload(int dest, std::size_t bytes) { sending_messenger(dest).check_payload_fits(bytes); }

void am_commit(int dest) { tls_module<messenger>->agg().commit(dest); }  // am_reserve found it

void am_send_bytes(int dest, std::uint32_t id, std::vector<std::byte>&& bytes) {
  static_assert(am_payload_offset == wire::single_prefix_bytes);
  messenger& m = sending_messenger(dest);
  // Take the bytes out of the (thread-shared) scratch vector: sending may yield to another fiber.
  std::vector<std::byte> mine = std::move(bytes);
  const std::size_t payload = mine.size() - am_payload_offset;
  m.check_payload_fits(payload);
  count_sent(1);
  if (payload > m.large_bytes()) {
    const std::uint32_t sequence = m.agg().take_single_sequence(dest);
    wire::frame_single(mine, static_cast<std::uint32_t>(m.id()), sequence, static_cast<std::uint16_t>(id));
    trace::instant<trace::kind::message_send>(message_flow(m.id(), dest, sequence), static_cast<std::uint64_t>(dest),
                                              payload);
    const std::size_t size = mine.size();
    m.out().transmit(dest, std::move(mine), 1);
    // The buffer left with the message; serialize the next one into a recycled buffer (a send that
    // completed) rather than growing a new one from nothing. Senders of large payloads tend to
    // send more of the same size.
    if (am_scratch().capacity() < size) am_scratch() = m.out().spare_buffer(size);
    return;
  }
  std::byte* out = m.agg().reserve(dest, static_cast<std::uint16_t>(id), payload);
  if (payload) std::memcpy(out, mine.data() + am_payload_offset, payload);
  m.agg().commit(dest);
  mine.clear();
  if (am_scratch().capacity() < mine.capacity()) am_scratch() = std::move(mine);
}

std::vector<std::byte>& am_scratch() {
  thread_local std::vector<std::byte> scratch;
  return scratch;
}

}  // namespace rill::detail

namespace rill {

int am::sender() {
  detail::worker* w = detail::current_worker();
  return w ? w->current_fiber()->message_source : -1;
}

std::size_t am::max_payload_bytes() { return detail::current_messenger("rill::am::max_payload_bytes").max_payload(); }

void am::flush() { detail::current_messenger("rill::am::flush").agg().flush_all(); }

}  // namespace rill
