// The bytes on the wire.
//
// A transport buffer is a 16-byte header followed by messages:
//   buffer : magic u32 | source rank u32 | message count u32 | first sequence u32 | message...
//   message: id u16 | length u16 | payload            (length < 0xFFFF)
//            id u16 | 0xFFFF u16 | length u32 | payload (longer payloads)
// The top bit of id marks runtime control messages, which termination detection does not count.
//
// With nodes of several ranks (messages/node_routes.hpp), a buffer for several ranks of another
// node is routed, and the rank of that node that receives it forwards each rank its messages:
//   routed   : magic_routed u32 | source rank u32 | message count u32 | destination node u32 | ...
//              to u16 | id u16 | length u16 [| length u32] [| sequence u32] | payload
//   forwarded: magic_forwarded u32 | source rank u32 | message count u32 | first sequence u32 | message...
// `to` is the destination's index within its node; its top bit marks the first message to it in
// the buffer, which carries the sequence of that destination's messages (the next ones follow on).
// A forwarded buffer is an ordinary one whose source is the rank that wrote it, not the forwarder.
// All integers are little-endian as on every supported target; reads use memcpy (no alignment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rill::detail::wire {

inline constexpr std::uint32_t magic = 0x4c4c4952;            // "RILL"
inline constexpr std::uint32_t magic_routed = 0x52524952;     // "RIRR"
inline constexpr std::uint32_t magic_forwarded = 0x46524952;  // "RIRF"
inline constexpr std::size_t buffer_header_bytes = 16;
// A buffer's first sequence numbers its messages from the source to the destination: aggregated
// ones count up per destination, a message sent in a buffer of its own has this bit set and counts
// apart. Only traces read it (a message's send and its handler share a flow id); 32 bits wrap.
inline constexpr std::uint32_t single_sequence_bit = 0x80000000u;
inline constexpr std::uint16_t control_bit = 0x8000;
inline constexpr std::uint16_t max_handler_id = 0x7fff;
inline constexpr std::uint16_t long_length = 0xffff;

inline std::size_t message_header_bytes(std::size_t payload) { return payload < long_length ? 4 : 8; }

template <class T>
inline void put(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
inline T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Writes a buffer header with a zero count at `b`.
inline void write_buffer_header(std::byte* b, std::uint32_t source, std::uint32_t first_sequence) {
  put(b, magic);
  put(b + 4, source);
  put<std::uint32_t>(b + 8, 0);
  put(b + 12, first_sequence);
}

// Starts a buffer: writes its header with a zero count.
inline void begin_buffer(std::vector<std::byte>& b, std::uint32_t source, std::uint32_t first_sequence) {
  b.resize(buffer_header_bytes);
  write_buffer_header(b.data(), source, first_sequence);
}

// The first sequence of the buffer starting at `b`.
inline std::uint32_t first_sequence(const std::byte* b) { return get<std::uint32_t>(b + 12); }

// The message count of the buffer starting at `b`.
inline std::uint32_t message_count(const std::byte* b) { return get<std::uint32_t>(b + 8); }
inline std::uint32_t message_count(const std::vector<std::byte>& b) { return message_count(b.data()); }

// Writes the header of a message at offset `at` of the buffer starting at `b` (which has room for
// it and its payload) and counts it in the buffer header; returns where the payload goes.
inline std::byte* write_message_header(std::byte* b, std::size_t at, std::uint16_t id, std::size_t payload) {
  const std::size_t hdr = message_header_bytes(payload);
  std::byte* p = b + at;
  put(p, id);
  if (hdr == 4) {
    put(p + 2, static_cast<std::uint16_t>(payload));
  } else {
    put(p + 2, long_length);
    put(p + 4, static_cast<std::uint32_t>(payload));
  }
  put(b + 8, get<std::uint32_t>(b + 8) + 1);
  return p + hdr;
}

// Appends a message header and room for its payload; returns where the payload goes.
inline std::byte* append_message(std::vector<std::byte>& b, std::uint16_t id, std::size_t payload) {
  const std::size_t at = b.size();
  b.resize(at + message_header_bytes(payload) + payload);
  return write_message_header(b.data(), at, id, payload);
}

// Routed buffers: the top bit of `to` marks a destination's first message in the buffer.
inline constexpr std::uint16_t first_to_bit = 0x8000;
inline constexpr int max_ranks_per_node = 0x7fff;

inline std::size_t routed_message_bytes(std::size_t payload, bool first) {
  return 2 + message_header_bytes(payload) + (first ? 4 : 0) + payload;
}

// Writes the header of a routed message at offset `at` of the routed buffer starting at `b` and
// counts it; returns where the payload goes. `sequence` is written for a first message only.
inline std::byte* write_routed_message_header(std::byte* b, std::size_t at, std::uint16_t to, bool first,
                                              std::uint32_t sequence, std::uint16_t id, std::size_t payload) {
  put(b + at, static_cast<std::uint16_t>(first ? to | first_to_bit : to));
  std::byte* p = write_message_header(b, at + 2, id, payload);
  if (first) {
    put(p, sequence);
    p += 4;
  }
  return p;
}

// A message of a routed buffer as read by next_routed_message.
struct routed_message {
  std::uint16_t to;
  bool first;
  std::uint32_t sequence;   // (first messages only)
  const std::byte* header;  // the ordinary message header (id, length)
  std::size_t header_bytes;
  const std::byte* payload;
  std::size_t payload_bytes;
};

// Reads the routed message that starts at `at` and moves `at` past it. Unchecked: only for a buffer
// this rank wrote or one messages/routed_wire.hpp validated, as many times as its count says.
inline routed_message next_routed_message(const std::byte* b, std::size_t& at) {
  routed_message m{};
  const auto to = get<std::uint16_t>(b + at);
  m.to = to & static_cast<std::uint16_t>(~first_to_bit);
  m.first = (to & first_to_bit) != 0;
  m.header = b + at + 2;
  std::size_t len = get<std::uint16_t>(m.header + 2);
  m.header_bytes = 4;
  if (len == long_length) {
    len = get<std::uint32_t>(m.header + 4);
    m.header_bytes = 8;
  }
  at += 2 + m.header_bytes;
  if (m.first) {
    m.sequence = get<std::uint32_t>(b + at);
    at += 4;
  }
  m.payload = b + at;
  m.payload_bytes = len;
  at += len;
  return m;
}

// Room to leave in front of a payload so that it can become a one-message buffer in place.
inline constexpr std::size_t single_prefix_bytes = buffer_header_bytes + 8;

// Turns b = [single_prefix_bytes of room][payload] into a buffer holding that one message (in the
// long form, which the decoder accepts for any length), without moving the payload.
// `payload` bytes follow the prefix on the wire (by default, the rest of b).
inline void frame_single(std::vector<std::byte>& b, std::uint32_t source, std::uint32_t sequence, std::uint16_t id,
                         std::size_t payload) {
  write_buffer_header(b.data(), source, sequence);
  put<std::uint32_t>(b.data() + 8, 1);
  put(b.data() + buffer_header_bytes, id);
  put(b.data() + buffer_header_bytes + 2, long_length);
  put(b.data() + buffer_header_bytes + 4, static_cast<std::uint32_t>(payload));
}
inline void frame_single(std::vector<std::byte>& b, std::uint32_t source, std::uint32_t sequence, std::uint16_t id) {
  frame_single(b, source, sequence, id, b.size() - single_prefix_bytes);
}

}  // namespace rill::detail::wire
