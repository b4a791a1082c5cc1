// Routed buffers (wire_format.hpp): how a sender turns its buffer for one rank of another node into
// one for several, and how the rank that receives it checks it and splits it into a forwarded
// buffer per destination (node_routes.hpp says who sends what where).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "messages/node_routes.hpp"
#include "transport/transport.hpp"

namespace rill::detail {

// Bytes an ordinary buffer of `messages` messages grows by when convert_to_routed rewrites it.
inline std::size_t routed_growth(std::uint32_t messages) { return 2 * std::size_t{messages} + 4; }

// Rewrites the ordinary buffer b[0, used), whose messages are all for the rank with index `to` on
// `node`, as a routed buffer, in place (b has routed_growth(count) more bytes of room); returns the
// bytes it now uses.
std::size_t convert_to_routed(std::byte* b, std::size_t used, std::uint16_t to, std::uint32_t node);

// A routed buffer's messages for one destination, by its index within the node.
struct routed_share {
  std::uint32_t messages = 0;
  std::uint32_t application = 0;  // not runtime control messages
};

// Checks a routed buffer that rank `self` received from `source` (on another node) whole: header,
// destinations (ranks of self's node, the first message to each marked), lengths and handler ids.
// Fills `shares` (one per rank of the node); returns an error text, or nothing.
std::optional<std::string> validate_routed(std::span<const std::byte> buf, int source, int self,
                                           const node_routes& routes, std::size_t handler_count,
                                           std::vector<routed_share>& shares);

// Splits a routed buffer that validate_routed accepted into forwarded buffers: pieces[to] (one per
// rank of the node; any contents, a recycled buffer say) becomes the messages for the rank with
// index `to`, in order, where that rank has any.
void split_routed(std::span<const std::byte> buf, std::vector<buffer>& pieces);

}  // namespace rill::detail
