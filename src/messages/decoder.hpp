// Validating decoder for received transport buffers. It never trusts the bytes: every length and
// handler id is checked before use, and a bad buffer yields an error naming what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "messages/wire_format.hpp"

namespace rill::detail {

struct decoded_message {
  std::uint16_t id;  // without the control bit
  bool control;
  const std::byte* payload;
  std::size_t bytes;
};

// Calls visit(decoded_message) for each message, after validating the whole buffer first (so a
// corrupt buffer runs no handler at all). Returns an error text, or nothing when the buffer is good.
template <class Visit>
std::optional<std::string> decode_buffer(std::span<const std::byte> buf, int source, std::size_t handler_count,
                                         Visit&& visit) {
  if (buf.size() < wire::buffer_header_bytes) {
    return fmt::format("truncated buffer from rank {}: {} bytes, header needs {}", source, buf.size(),
                       wire::buffer_header_bytes);
  }
  if (wire::get<std::uint32_t>(buf.data()) != wire::magic) {
    return fmt::format("buffer from rank {} does not start with Rill's magic number", source);
  }
  const auto claimed = wire::get<std::uint32_t>(buf.data() + 4);
  if (claimed != static_cast<std::uint32_t>(source)) {
    return fmt::format("buffer received from rank {} claims to come from rank {}", source, claimed);
  }
  const auto count = wire::get<std::uint32_t>(buf.data() + 8);
  for (int pass = 0; pass < 2; ++pass) {
    std::size_t at = wire::buffer_header_bytes;
    for (std::uint32_t i = 0; i < count; ++i) {
      if (buf.size() - at < 4) {
        return fmt::format("truncated message {} of {} from rank {}", i, count, source);
      }
      const auto raw_id = wire::get<std::uint16_t>(buf.data() + at);
      std::size_t len = wire::get<std::uint16_t>(buf.data() + at + 2);
      at += 4;
      if (len == wire::long_length) {
        if (buf.size() - at < 4) return fmt::format("truncated message {} of {} from rank {}", i, count, source);
        len = wire::get<std::uint32_t>(buf.data() + at);
        at += 4;
      }
      const std::uint16_t id = raw_id & wire::max_handler_id;
      if (id >= handler_count) {
        return fmt::format("unknown handler id {} in message {} from rank {} (this binary has {} handlers)", id, i,
                           source, handler_count);
      }
      if (len > buf.size() - at) {
        return fmt::format("truncated message {} of {} from rank {}: payload of {} bytes, {} left", i, count, source,
                           len, buf.size() - at);
      }
      if (pass == 1) visit(decoded_message{id, (raw_id & wire::control_bit) != 0, buf.data() + at, len});
      at += len;
    }
    if (at != buf.size()) {
      return fmt::format("buffer from rank {} has {} bytes after its {} messages", source, buf.size() - at, count);
    }
  }
  return std::nullopt;
}

}  // namespace rill::detail
