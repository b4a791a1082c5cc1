// Unit tests of the wire format (src/messages/wire_format.hpp) and the validating decoder
// (src/messages/decoder.hpp).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "messages/decoder.hpp"
#include "messages/wire_format.hpp"

namespace {

namespace wire = rill::detail::wire;
using rill::detail::decode_buffer;
using rill::detail::decoded_message;

struct msg {
  std::uint16_t id;  // may include the control bit
  std::vector<std::byte> payload;
};

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

std::vector<std::byte> build(std::uint32_t source, const std::vector<msg>& msgs) {
  std::vector<std::byte> b;
  wire::begin_buffer(b, source, 0);
  for (const auto& m : msgs) {
    std::byte* out = wire::append_message(b, m.id, m.payload.size());
    if (!m.payload.empty()) std::memcpy(out, m.payload.data(), m.payload.size());
  }
  return b;
}

struct seen {
  std::uint16_t id;
  bool control;
  std::vector<std::byte> payload;
  const std::byte* where;
};

struct result {
  std::optional<std::string> error;
  std::vector<seen> visited;
};

result decode(const std::vector<std::byte>& b, int source, std::size_t handlers = 100) {
  result r;
  r.error =
      decode_buffer(std::span<const std::byte>(b.data(), b.size()), source, handlers, [&](const decoded_message& m) {
        r.visited.push_back({m.id, m.control, std::vector<std::byte>(m.payload, m.payload + m.bytes), m.payload});
      });
  return r;
}

// A corrupt buffer yields an error that names the sending rank, and runs no handler at all.
void expect_rejected(const std::vector<std::byte>& b, int source, std::size_t handlers = 100) {
  result r = decode(b, source, handlers);
  ASSERT_TRUE(r.error.has_value()) << "corrupt buffer accepted";
  EXPECT_NE(r.error->find("rank " + std::to_string(source)), std::string::npos) << "error text: " << *r.error;
  EXPECT_TRUE(r.visited.empty()) << r.visited.size() << " message(s) visited before the error was found";
}

TEST(WireFormat, BeginBufferWritesHeader) {
  std::vector<std::byte> b{std::byte{9}, std::byte{9}};  // overwritten
  wire::begin_buffer(b, 1234, 0);
  ASSERT_EQ(b.size(), wire::buffer_header_bytes);
  EXPECT_EQ(wire::get<std::uint32_t>(b.data()), wire::magic);
  EXPECT_EQ(wire::get<std::uint32_t>(b.data() + 4), 1234u);
  EXPECT_EQ(wire::message_count(b), 0u);
  const char rill[4] = {'R', 'I', 'L', 'L'};
  EXPECT_EQ(std::memcmp(b.data(), rill, 4), 0);
}

TEST(WireFormat, HeaderSizeSwitchesAtLongLength) {
  EXPECT_EQ(wire::message_header_bytes(0), 4u);
  EXPECT_EQ(wire::message_header_bytes(0xfffe), 4u);
  EXPECT_EQ(wire::message_header_bytes(0xffff), 8u);
  EXPECT_EQ(wire::message_header_bytes(1u << 20), 8u);
}

TEST(WireFormat, AppendMessageLaysOutShortAndLongHeaders) {
  std::vector<std::byte> b;
  wire::begin_buffer(b, 3, 0);
  std::byte* p1 = wire::append_message(b, 5, 10);
  std::memset(p1, 0x11, 10);
  EXPECT_EQ(wire::message_count(b), 1u);
  EXPECT_EQ(b.size(), wire::buffer_header_bytes + 4 + 10);
  std::byte* p2 = wire::append_message(b, static_cast<std::uint16_t>(6 | wire::control_bit), 0x10000);
  EXPECT_EQ(wire::message_count(b), 2u);
  EXPECT_EQ(b.size(), wire::buffer_header_bytes + 4 + 10 + 8 + 0x10000);
  EXPECT_EQ(p2, b.data() + wire::buffer_header_bytes + 14 + 8);
  const std::byte* m1 = b.data() + wire::buffer_header_bytes;
  EXPECT_EQ(wire::get<std::uint16_t>(m1), 5);
  EXPECT_EQ(wire::get<std::uint16_t>(m1 + 2), 10);
  const std::byte* m2 = m1 + 14;
  EXPECT_EQ(wire::get<std::uint16_t>(m2), 6 | wire::control_bit);
  EXPECT_EQ(wire::get<std::uint16_t>(m2 + 2), wire::long_length);
  EXPECT_EQ(wire::get<std::uint32_t>(m2 + 4), 0x10000u);
}

TEST(Decoder, EmptyBufferOfMessagesIsValid) {
  auto b = build(2, {});
  result r = decode(b, 2);
  EXPECT_FALSE(r.error.has_value()) << *r.error;
  EXPECT_TRUE(r.visited.empty());
}

TEST(Decoder, VisitsEveryMessageWithIdPayloadAndControlFlag) {
  std::vector<msg> msgs = {
      {0, {}},
      {1, pattern(1, 1)},
      {7, pattern(100, 2)},
      {static_cast<std::uint16_t>(3 | wire::control_bit), pattern(16, 3)},
      {99, pattern(0xfffe, 4)},  // longest short-header payload
      {42, pattern(0xffff, 5)},  // shortest long-header payload
      {static_cast<std::uint16_t>(98 | wire::control_bit), pattern(200000, 6)},
      {5, pattern(3, 7)},
  };
  auto b = build(4, msgs);
  EXPECT_EQ(wire::message_count(b), msgs.size());
  result r = decode(b, 4);
  ASSERT_FALSE(r.error.has_value()) << *r.error;
  ASSERT_EQ(r.visited.size(), msgs.size());
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    SCOPED_TRACE("message " + std::to_string(i));
    EXPECT_EQ(r.visited[i].id, msgs[i].id & wire::max_handler_id);
    EXPECT_EQ(r.visited[i].control, (msgs[i].id & wire::control_bit) != 0);
    EXPECT_EQ(r.visited[i].payload.size(), msgs[i].payload.size());
    EXPECT_TRUE(r.visited[i].payload == msgs[i].payload);
    // Payload pointers point into the buffer, in order.
    EXPECT_GE(r.visited[i].where, b.data());
    EXPECT_LE(r.visited[i].where + r.visited[i].payload.size(), b.data() + b.size());
    if (i > 0) {
      EXPECT_GT(r.visited[i].where, r.visited[i - 1].where);
    }
  }
}

TEST(Decoder, HighestHandlerIdIsAccepted) {
  auto b = build(0, {{9, pattern(5, 1)}, {static_cast<std::uint16_t>(9 | wire::control_bit), {}}});
  result r = decode(b, 0, 10);
  ASSERT_FALSE(r.error.has_value()) << *r.error;
  ASSERT_EQ(r.visited.size(), 2u);
  EXPECT_EQ(r.visited[1].id, 9);
  EXPECT_TRUE(r.visited[1].control);
}

TEST(Decoder, RejectsEmptyAndShortBuffers) {
  expect_rejected({}, 3);
  auto full = build(3, {});
  for (std::size_t n = 1; n < wire::buffer_header_bytes; ++n) {
    std::vector<std::byte> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    SCOPED_TRACE(n);
    expect_rejected(b, 3);
  }
}

TEST(Decoder, RejectsBadMagic) {
  auto b = build(1, {{1, pattern(4, 1)}});
  b[0] ^= std::byte{0x01};
  expect_rejected(b, 1);
  auto c = build(1, {{1, pattern(4, 1)}});
  c[3] = std::byte{0};
  expect_rejected(c, 1);
}

TEST(Decoder, RejectsSourceMismatchNamingBothRanks) {
  auto b = build(5, {{1, pattern(4, 1)}});
  result r = decode(b, 6);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_NE(r.error->find("rank 6"), std::string::npos) << *r.error;
  EXPECT_NE(r.error->find("rank 5"), std::string::npos) << *r.error;
  EXPECT_TRUE(r.visited.empty());
  expect_rejected(b, 6);
}

TEST(Decoder, RejectsUnknownHandlerId) {
  // The bad message comes last: earlier good ones must not run either.
  auto b = build(2, {{1, pattern(8, 1)}, {2, pattern(8, 2)}, {10, pattern(8, 3)}});
  expect_rejected(b, 2, 10);
  result r = decode(b, 2, 10);
  EXPECT_NE(r.error->find("10"), std::string::npos) << *r.error;
  // The same buffer is fine for a binary with more handlers.
  EXPECT_FALSE(decode(b, 2, 11).error.has_value());
  // The control bit does not hide an out-of-range id.
  auto c = build(2, {{1, {}}, {static_cast<std::uint16_t>(12 | wire::control_bit), {}}});
  expect_rejected(c, 2, 10);
  // No handlers at all: every id is unknown.
  expect_rejected(build(2, {{0, {}}}), 2, 0);
}

TEST(Decoder, RejectsTruncatedPayload) {
  auto full = build(7, {{1, pattern(20, 1)}, {2, pattern(300, 2)}});
  for (std::size_t cut = 1; cut <= 300; cut += 37) {
    std::vector<std::byte> b(full.begin(), full.end() - static_cast<std::ptrdiff_t>(cut));
    SCOPED_TRACE(cut);
    expect_rejected(b, 7);
  }
  auto longer = build(7, {{1, pattern(10, 1)}, {2, pattern(70000, 2)}});
  longer.pop_back();
  expect_rejected(longer, 7);
}

TEST(Decoder, RejectsTruncatedMessageHeader) {
  auto full = build(1, {{1, pattern(4, 1)}, {2, {}}});  // second message is a bare 4-byte header
  for (std::size_t cut = 1; cut <= 3; ++cut) {
    std::vector<std::byte> b(full.begin(), full.end() - static_cast<std::ptrdiff_t>(cut));
    SCOPED_TRACE(cut);
    expect_rejected(b, 1);
  }
}

TEST(Decoder, RejectsTruncatedLongLengthHeader) {
  // A message announcing a long length (0xFFFF) whose 4-byte length field is cut short.
  for (std::size_t have = 0; have < 4; ++have) {
    auto b = build(3, {{1, pattern(6, 1)}});
    std::byte hdr[4];
    wire::put<std::uint16_t>(hdr, 2);
    wire::put<std::uint16_t>(hdr + 2, wire::long_length);
    b.insert(b.end(), hdr, hdr + 4);
    for (std::size_t k = 0; k < have; ++k) b.push_back(std::byte{0});
    wire::put<std::uint32_t>(b.data() + 8, 2);
    SCOPED_TRACE(have);
    expect_rejected(b, 3);
  }
  // And a complete long header whose length exceeds what follows.
  auto full = build(3, {{1, pattern(6, 1)}, {2, pattern(0x10000, 2)}});
  std::vector<std::byte> cut(full.begin(),
                             full.begin() + static_cast<std::ptrdiff_t>(wire::buffer_header_bytes + 10 + 8 + 100));
  expect_rejected(cut, 3);
}

TEST(Decoder, RejectsCountLargerThanMessages) {
  auto b = build(0, {{1, pattern(4, 1)}, {1, pattern(4, 2)}});
  wire::put<std::uint32_t>(b.data() + 8, 3);
  expect_rejected(b, 0);
  wire::put<std::uint32_t>(b.data() + 8, 0xffffffffu);
  expect_rejected(b, 0);
}

TEST(Decoder, RejectsTrailingBytesAfterCountedMessages) {
  auto b = build(9, {{1, pattern(4, 1)}, {1, pattern(4, 2)}});
  b.push_back(std::byte{0});
  expect_rejected(b, 9);
  // A whole extra message the count does not mention.
  auto c = build(9, {{1, pattern(4, 1)}, {1, pattern(4, 2)}});
  wire::put<std::uint32_t>(c.data() + 8, 1);
  expect_rejected(c, 9);
  // Count zero but bytes follow the header.
  auto d = build(9, {{1, {}}});
  wire::put<std::uint32_t>(d.data() + 8, 0);
  expect_rejected(d, 9);
}

TEST(Decoder, LengthsAreNotTrustedForOverflow) {
  // A long length of 0xFFFFFFFF must not wrap any bounds arithmetic.
  auto b = build(4, {{1, pattern(4, 1)}});
  std::byte hdr[8];
  wire::put<std::uint16_t>(hdr, 1);
  wire::put<std::uint16_t>(hdr + 2, wire::long_length);
  wire::put<std::uint32_t>(hdr + 4, 0xffffffffu);
  b.insert(b.end(), hdr, hdr + 8);
  b.insert(b.end(), 16, std::byte{0});
  wire::put<std::uint32_t>(b.data() + 8, 2);
  expect_rejected(b, 4);
}

TEST(Decoder, EveryPrefixOfAGoodBufferIsRejected) {
  auto full = build(6, {{1, pattern(3, 1)}, {2, pattern(0xffff, 2)}, {3, {}}, {4, pattern(17, 4)}});
  ASSERT_FALSE(decode(full, 6).error.has_value());
  for (std::size_t n = 0; n < full.size(); n += (n < 64 || full.size() - n < 64) ? 1 : 997) {
    std::vector<std::byte> b(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    SCOPED_TRACE(n);
    expect_rejected(b, 6);
  }
}

}  // namespace
