// Validating decoder for received transport buffers. It never trusts the bytes: every length and
// handler id is checked before use, and a bad buffer yields an error naming what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "messages/node_routes.hpp"
#include "messages/wire_format.hpp"

namespace rill::detail {

struct decoded_message {
  std::uint16_t id;  // without the control bit
  bool control;
  const std::byte* payload;
  std::size_t bytes;
};

// Reads the message that starts at `at` in a buffer that validate_buffer accepted, and moves `at`
// past it. Unchecked: call it only as many times as the buffer's count says.
inline decoded_message next_message(std::span<const std::byte> buf, std::size_t& at) {
  const auto raw_id = wire::get<std::uint16_t>(buf.data() + at);
  std::size_t len = wire::get<std::uint16_t>(buf.data() + at + 2);
  at += 4;
  if (len == wire::long_length) {
    len = wire::get<std::uint32_t>(buf.data() + at);
    at += 4;
  }
  const decoded_message m{static_cast<std::uint16_t>(raw_id & wire::max_handler_id), (raw_id & wire::control_bit) != 0,
                          buf.data() + at, len};
  at += len;
  return m;
}

// Whether a buffer this rank built holds a runtime control message. The local transport's fault
// injector loses only buffers without one (rill::fault_plan): the protocols that detect a loss run
// on control messages.
inline bool has_control_message(std::span<const std::byte> buf) {
  std::size_t at = wire::buffer_header_bytes;
  const bool routed = wire::get<std::uint32_t>(buf.data()) == wire::magic_routed;
  for (std::uint32_t i = wire::message_count(buf.data()); i > 0; --i) {
    const bool control =
        routed ? (wire::get<std::uint16_t>(wire::next_routed_message(buf.data(), at).header) & wire::control_bit) != 0
               : next_message(buf, at).control;
    if (control) return true;
  }
  return false;
}

// What a valid buffer holds: its messages, how many of them are not runtime control messages
// (delivery audits compare those: messages/delivery_counts.hpp), and the rank that sent them (the
// transport's source, or for a forwarded buffer the rank on another node that wrote them).
struct buffer_counts {
  std::uint32_t messages;
  std::uint32_t application;
  int source;
};

// Checks the message that starts at `at`, message i of `count` from `source`, and moves `at` past
// it; counts it in `control` if it is a control message. Returns an error text, or nothing.
inline std::optional<std::string> check_message(std::span<const std::byte> buf, std::size_t& at, std::uint32_t i,
                                                std::uint32_t count, int source, std::size_t handler_count,
                                                std::uint32_t& control, std::size_t extra_before_payload = 0) {
  if (buf.size() - at < 4) return fmt::format("truncated message {} of {} from rank {}", i, count, source);
  const auto raw_id = wire::get<std::uint16_t>(buf.data() + at);
  std::size_t len = wire::get<std::uint16_t>(buf.data() + at + 2);
  at += 4;
  if (len == wire::long_length) {
    if (buf.size() - at < 4) return fmt::format("truncated message {} of {} from rank {}", i, count, source);
    len = wire::get<std::uint32_t>(buf.data() + at);
    at += 4;
  }
  const std::uint16_t id = raw_id & wire::max_handler_id;
  static_assert(wire::control_bit == 0x8000);
  control += raw_id >> 15;  // the top bit is the control bit
  if (id >= handler_count) {
    return fmt::format("unknown handler id {} in message {} from rank {} (this binary has {} handlers)", id, i, source,
                       handler_count);
  }
  if (extra_before_payload > buf.size() - at)
    return fmt::format("truncated message {} of {} from rank {}", i, count, source);
  at += extra_before_payload;
  if (len > buf.size() - at) {
    return fmt::format("truncated message {} of {} from rank {}: payload of {} bytes, {} left", i, count, source, len,
                       buf.size() - at);
  }
  at += len;
  return std::nullopt;
}

// Checks a whole buffer before any of its handlers runs (a corrupt buffer runs none): header,
// every length and every handler id. Returns what it holds, or an error text. With `routes`, a
// forwarded buffer (routed_wire.hpp) is accepted too: one that a rank of this rank's node passes on
// from a rank of another node.
inline std::variant<buffer_counts, std::string> validate_buffer(std::span<const std::byte> buf, int source,
                                                                std::size_t handler_count,
                                                                const node_routes* routes = nullptr, int self = -1) {
  if (buf.size() < wire::buffer_header_bytes) {
    return fmt::format("truncated buffer from rank {}: {} bytes, header needs {}", source, buf.size(),
                       wire::buffer_header_bytes);
  }
  const auto magic = wire::get<std::uint32_t>(buf.data());
  const auto claimed = wire::get<std::uint32_t>(buf.data() + 4);
  int writer = source;
  if (magic == wire::magic_forwarded && routes) {
    if (claimed >= static_cast<std::uint32_t>(routes->ranks()) || routes->same_node(static_cast<int>(claimed), self) ||
        !routes->same_node(source, self) || source == self) {
      return fmt::format(
          "buffer forwarded by rank {} claims to come from rank {}, which rank {} would not get through it", source,
          claimed, self);
    }
    writer = static_cast<int>(claimed);
  } else if (magic != wire::magic) {
    return fmt::format("buffer from rank {} does not start with Rill's magic number", source);
  } else if (claimed != static_cast<std::uint32_t>(source)) {
    return fmt::format("buffer received from rank {} claims to come from rank {}", source, claimed);
  }
  const auto count = wire::get<std::uint32_t>(buf.data() + 8);
  std::uint32_t control = 0;
  std::size_t at = wire::buffer_header_bytes;
  for (std::uint32_t i = 0; i < count; ++i)
    if (auto error = check_message(buf, at, i, count, writer, handler_count, control)) return std::move(*error);
  if (at != buf.size()) {
    return fmt::format("buffer from rank {} has {} bytes after its {} messages", writer, buf.size() - at, count);
  }
  return buffer_counts{count, count - control, writer};
}

// Calls visit(decoded_message) for each message, after validating the whole buffer first (so a
// corrupt buffer runs no handler at all). Returns an error text, or nothing when the buffer is good.
template <class Visit>
std::optional<std::string> decode_buffer(std::span<const std::byte> buf, int source, std::size_t handler_count,
                                         Visit&& visit) {
  auto checked = validate_buffer(buf, source, handler_count);
  if (auto* error = std::get_if<std::string>(&checked)) return std::move(*error);
  std::size_t at = wire::buffer_header_bytes;
  for (std::uint32_t i = std::get<buffer_counts>(checked).messages; i > 0; --i) visit(next_message(buf, at));
  return std::nullopt;
}

}  // namespace rill::detail
