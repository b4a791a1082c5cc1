// libFuzzer target: arbitrary bytes into the validating buffer decoder (ordinary and routed
// buffers) and, for every message it
// accepts, the payload into the argument decoder of a protocol message, chosen by the message's
// handler id: what the events, reservation, AGAS, one-sided and collective protocols read from
// another rank (the argument lists of their handlers), index and field spaces, the shapes copies
// and replays send between ranks (field placements, rects), and a plain string and vector.
//
// Input layout: byte 0 is the rank the buffer is received from; the rest is the buffer. The
// harness checks the decoder's contract: it visits only after validating the whole buffer (an
// error means no message was visited), every id is below the handler count, every payload lies
// inside the buffer, and no more messages are visited than the header counts. A payload the
// argument decoder refuses throws rill::decode_error (the runtime then stops naming the sender);
// anything else -- a read outside the payload, a crash, a leak -- is a finding.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "data/instance_layout.hpp"
#include "events/event_table.hpp"
#include "messages/decoder.hpp"
#include "messages/routed_wire.hpp"
#include "messages/wire_format.hpp"
#include "rill/field_space.hpp"
#include "rill/index_space.hpp"
#include "rill/reservation.hpp"
#include "rill/rma.hpp"
#include "rill/serialization.hpp"
#include "rill/team.hpp"

namespace {

[[noreturn]] void contract_broken() { __builtin_trap(); }

template <class Tuple>
void decode_as(const std::byte* p, std::size_t n) {
  try {
    const Tuple t = rill::detail::deserialize_tuple<Tuple>(p, n);
    // Touch what was decoded (ASan and UBSan see every byte).
    volatile std::size_t sink = sizeof(t);
    (void)sink;
  } catch (const rill::decode_error&) {
  }
}

using rill::detail::coll_header;
using rill::detail::poison_wire;
// The argument lists of the protocols' handlers that read more than fixed-size values.
using event_notify = std::tuple<std::uint32_t, std::uint64_t, std::vector<poison_wire>>;
using event_poisoned_trigger = std::tuple<std::uint32_t, std::uint64_t, bool, bool, poison_wire>;
using reservation_transfer = std::tuple<rill::reservation, bool, std::vector<std::byte>, std::vector<std::int32_t>>;
using gas_failure = std::tuple<std::uint64_t, std::string>;
using rma_put = std::tuple<std::uintptr_t, rill::detail::transfer_shape, std::vector<std::byte>>;
using counter_failure = std::tuple<std::uintptr_t, std::string>;
using collective_values = std::tuple<coll_header, std::vector<long>>;
using collective_string = std::tuple<coll_header, std::string>;
using collective_nested = std::tuple<coll_header, std::vector<std::vector<std::int32_t>>>;
using data_shapes = std::tuple<rill::index_space<2>, rill::field_space>;
// What a copy's source and a replay's list rank are told of the destination, and a piece's rects.
using transfer_shapes = std::tuple<std::vector<rill::detail::field_placement>, rill::index_space<3>,
                                   std::vector<rill::rect<3>>, rill::rect<3>>;
using plain = std::tuple<std::string, std::vector<int>>;

constexpr std::size_t decoders = 12;
constexpr std::size_t handler_count = decoders;

void deserialize(std::uint16_t id, const std::byte* p, std::size_t n) {
  switch (id % decoders) {
    case 0: return decode_as<event_notify>(p, n);
    case 1: return decode_as<event_poisoned_trigger>(p, n);
    case 2: return decode_as<reservation_transfer>(p, n);
    case 3: return decode_as<gas_failure>(p, n);
    case 4: return decode_as<rma_put>(p, n);
    case 5: return decode_as<counter_failure>(p, n);
    case 6: return decode_as<collective_values>(p, n);
    case 7: return decode_as<collective_string>(p, n);
    case 8: return decode_as<collective_nested>(p, n);
    case 9: return decode_as<data_shapes>(p, n);
    case 11: return decode_as<transfer_shapes>(p, n);
    default: return decode_as<plain>(p, n);
  }
}

// A routed buffer (hierarchical aggregation), received by rank 5 of 16 in nodes of 4: one the
// checker accepts splits into forwarded buffers, each of which the rank it is for accepts, holding
// the messages and control messages the checker counted for it, from the rank that wrote them.
void routed(std::span<const std::byte> buf, int source) {
  using namespace rill::detail;
  constexpr int self = 5, ranks = 16, per_node = 4;
  const node_routes routes(self, ranks, per_node);
  std::vector<routed_share> shares;
  if (auto error = validate_routed(buf, source % ranks, self, routes, handler_count, shares)) {
    if (error->find("rank") == std::string::npos) contract_broken();
    return;
  }
  std::vector<buffer> pieces(shares.size());
  split_routed(buf, pieces);
  for (std::size_t to = 0; to < shares.size(); ++to) {
    const int dest = routes.rank_at(routes.node_of(self), static_cast<int>(to));
    if (shares[to].messages == 0 || dest == self) continue;
    const node_routes there(dest, ranks, per_node);
    auto checked = validate_buffer(pieces[to], self, handler_count, &there, dest);
    const auto* counts = std::get_if<buffer_counts>(&checked);
    if (!counts || counts->source != source % ranks || counts->messages != shares[to].messages ||
        counts->application != shares[to].application)
      contract_broken();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int source = data[0];
  const auto* begin = reinterpret_cast<const std::byte*>(data + 1);
  const std::span<const std::byte> buf(begin, size - 1);
  if (buf.size() >= 4 && rill::detail::wire::get<std::uint32_t>(buf.data()) == rill::detail::wire::magic_routed) {
    routed(buf, source);
    return 0;
  }

  std::size_t visited = 0;
  std::size_t last_end = rill::detail::wire::buffer_header_bytes;  // offset just past the last payload
  auto error = rill::detail::decode_buffer(buf, source, handler_count, [&](const rill::detail::decoded_message& m) {
    ++visited;
    if (m.id >= handler_count) contract_broken();
    if (m.payload < begin) contract_broken();
    const auto at = static_cast<std::size_t>(m.payload - begin);
    if (at < last_end || at > buf.size() || m.bytes > buf.size() - at) contract_broken();
    last_end = at + m.bytes;
    // Read every payload byte (ASan reports any out-of-bounds one).
    volatile unsigned sum = 0;
    for (std::size_t i = 0; i < m.bytes; ++i) sum = sum + static_cast<unsigned>(m.payload[i]);
    (void)sum;
    deserialize(m.id, m.payload, m.bytes);
  });

  if (error) {
    if (visited != 0) contract_broken();                              // a corrupt buffer must run no handler
    if (error->find("rank") == std::string::npos) contract_broken();  // errors name the sender
  } else {
    if (buf.size() < rill::detail::wire::buffer_header_bytes) contract_broken();
    if (visited != rill::detail::wire::get<std::uint32_t>(buf.data() + 8)) contract_broken();
    if (last_end != buf.size()) contract_broken();  // no trailing bytes accepted
  }
  return 0;
}
