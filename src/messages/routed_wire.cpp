#include "messages/routed_wire.hpp"

#include <cstring>

#include <fmt/format.h>

#include "messages/decoder.hpp"
#include "messages/wire_format.hpp"

namespace rill::detail {

std::size_t convert_to_routed(std::byte* b, std::size_t used, std::uint16_t to, std::uint32_t node) {
  const std::uint32_t count = wire::message_count(b);
  if (count == 0) return used;
  // Where each message starts now; message i moves right by 2i + 4 (one `to` before it and each
  // earlier one, and the first message's sequence), so they are moved last to first.
  thread_local std::vector<std::size_t> starts;
  starts.clear();
  std::size_t at = wire::buffer_header_bytes;
  const std::span<const std::byte> bytes(b, used);
  for (std::uint32_t i = 0; i < count; ++i) {
    starts.push_back(at);
    next_message(bytes, at);
  }
  for (std::uint32_t i = count; i-- > 1;) {
    const std::size_t from = starts[i];
    const std::size_t length = (i + 1 < count ? starts[i + 1] : used) - from;
    const std::size_t dest = from + 2 * std::size_t{i} + 4;
    std::memmove(b + dest + 2, b + from, length);
    wire::put(b + dest, to);
  }
  // The first message: to | header | sequence | payload.
  const std::size_t first = starts[0];
  const std::size_t first_end = count > 1 ? starts[1] : used;
  const std::size_t header = wire::get<std::uint16_t>(b + first + 2) == wire::long_length ? 8 : 4;
  std::memmove(b + first + 2 + header + 4, b + first + header, first_end - first - header);
  std::memmove(b + first + 2, b + first, header);
  wire::put(b + first, static_cast<std::uint16_t>(to | wire::first_to_bit));
  wire::put(b + first + 2 + header, wire::first_sequence(b));
  wire::put(b, wire::magic_routed);
  wire::put(b + 12, node);
  return used + routed_growth(count);
}

std::optional<std::string> validate_routed(std::span<const std::byte> buf, int source, int self,
                                           const node_routes& routes, std::size_t handler_count,
                                           std::vector<routed_share>& shares) {
  const int node = routes.node_of(self);
  shares.assign(static_cast<std::size_t>(routes.node_size(node)), routed_share{});
  if (buf.size() < wire::buffer_header_bytes)
    return fmt::format("truncated routed buffer from rank {}: {} bytes", source, buf.size());
  const auto claimed = wire::get<std::uint32_t>(buf.data() + 4);
  if (claimed != static_cast<std::uint32_t>(source))
    return fmt::format("routed buffer received from rank {} claims to come from rank {}", source, claimed);
  if (routes.same_node(source, self))
    return fmt::format("routed buffer from rank {}, of rank {}'s own node", source, self);
  const auto for_node = wire::get<std::uint32_t>(buf.data() + 12);
  if (for_node != static_cast<std::uint32_t>(node))
    return fmt::format("routed buffer from rank {} is for node {}, rank {} is on node {}", source, for_node, self,
                       node);
  const auto count = wire::message_count(buf.data());
  std::size_t at = wire::buffer_header_bytes;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (buf.size() - at < 2) return fmt::format("truncated message {} of {} from rank {}", i, count, source);
    const auto raw_to = wire::get<std::uint16_t>(buf.data() + at);
    const std::size_t to = raw_to & static_cast<std::uint16_t>(~wire::first_to_bit);
    const bool first = (raw_to & wire::first_to_bit) != 0;
    if (to >= shares.size()) {
      return fmt::format("message {} of {} from rank {} is for rank index {} of node {}, which has {} ranks", i, count,
                         source, to, node, shares.size());
    }
    routed_share& share = shares[to];
    if (first != (share.messages == 0)) {
      return fmt::format("message {} of {} from rank {} to rank {} {} its destination's first", i, count, source,
                         routes.rank_at(node, static_cast<int>(to)), first ? "claims to be" : "is, but is not marked");
    }
    at += 2;
    std::uint32_t control = 0;
    if (auto error = check_message(buf, at, i, count, source, handler_count, control, first ? 4 : 0)) return error;
    ++share.messages;
    share.application += 1 - control;
  }
  if (at != buf.size())
    return fmt::format("routed buffer from rank {} has {} bytes after its {} messages", source, buf.size() - at, count);
  return std::nullopt;
}

void split_routed(std::span<const std::byte> buf, std::vector<buffer>& pieces) {
  const auto source = wire::get<std::uint32_t>(buf.data() + 4);
  std::size_t at = wire::buffer_header_bytes;
  for (std::uint32_t i = wire::message_count(buf.data()); i > 0; --i) {
    const wire::routed_message m = wire::next_routed_message(buf.data(), at);
    buffer& piece = pieces[m.to];
    if (m.first) {
      wire::begin_buffer(piece, source, m.sequence);
      wire::put(piece.data(), wire::magic_forwarded);
    }
    piece.insert(piece.end(), m.header, m.header + m.header_bytes);
    piece.insert(piece.end(), m.payload, m.payload + m.payload_bytes);
    wire::put(piece.data() + 8, wire::message_count(piece.data()) + 1);
  }
}

}  // namespace rill::detail
