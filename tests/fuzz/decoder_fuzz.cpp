// libFuzzer target: arbitrary bytes into the validating buffer decoder and, for every message it
// accepts, the payload into the argument deserializer.
//
// Input layout: byte 0 is the rank the buffer is received from; the rest is the buffer. The
// harness checks the decoder's contract: it visits only after validating the whole buffer (an
// error means no message was visited), every id is below the handler count, every payload lies
// inside the buffer, and no more messages are visited than the header counts.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "messages/decoder.hpp"
#include "messages/wire_format.hpp"
#include "rill/serialization.hpp"

namespace {

constexpr std::size_t handler_count = 5;

[[noreturn]] void contract_broken() { __builtin_trap(); }

void deserialize(const std::byte* p, std::size_t n) {
  try {
    auto [s, v] = rill::detail::deserialize_tuple<std::tuple<std::string, std::vector<int>>>(p, n);
    // Touch what was decoded.
    volatile std::size_t sink = s.size() + v.size();
    for (char c : s) sink = sink + static_cast<unsigned char>(c);
    for (int x : v) sink = sink + static_cast<std::size_t>(x);
    (void)sink;
  } catch (const rill::decode_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int source = data[0];
  const auto* begin = reinterpret_cast<const std::byte*>(data + 1);
  const std::span<const std::byte> buf(begin, size - 1);

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
    deserialize(m.payload, m.bytes);
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
