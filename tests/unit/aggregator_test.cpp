// Unit tests of per-destination message aggregation (src/messages/aggregator.hpp).
#include "messages/aggregator.hpp"

#include <functional>

#include <gtest/gtest.h>

#include "common/clock.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "messages/decoder.hpp"
#include "messages/node_routes.hpp"
#include "messages/routed_wire.hpp"
#include "messages/wire_format.hpp"

namespace {

namespace wire = rill::detail::wire;
using rill::detail::aggregator;
using rill::detail::buffer;

constexpr std::size_t handlers = 64;

struct sent {
  int dest;
  buffer bytes;
};

using submit_fn = std::function<void(int, buffer&&)>;
using send_copy_fn = std::function<bool(int, std::span<const std::byte>)>;

// The aggregator says how many of a buffer's messages are not control messages (delivery audits
// count those): every buffer it hands over must hold exactly that many.
void expect_application_count(std::span<const std::byte> bytes, std::uint32_t application) {
  if (rill::detail::wire::get<std::uint32_t>(bytes.data()) == rill::detail::wire::magic_routed) {
    EXPECT_EQ(application, 0u) << "a routed buffer's messages are counted per destination (count_handed)";
    return;
  }
  const int source = static_cast<int>(rill::detail::wire::get<std::uint32_t>(bytes.data() + 4));
  std::uint32_t found = 0;
  auto error = rill::detail::decode_buffer(bytes, source, handlers,
                                           [&](const rill::detail::decoded_message& m) { found += m.control ? 0 : 1; });
  ASSERT_FALSE(error.has_value()) << *error;
  EXPECT_EQ(application, found);
}

// The aggregator's sink as two functions; no copies unless send_copy is given.
struct function_sink final : rill::detail::buffer_sink {
  submit_fn submit;
  send_copy_fn send_copy;
  explicit function_sink(submit_fn s, send_copy_fn c = {}) : submit(std::move(s)), send_copy(std::move(c)) {}
  void transmit(int dest, buffer&& b, std::uint32_t application) override {
    expect_application_count(b, application);
    submit(dest, std::move(b));
  }
  bool transmit_copy(int dest, std::span<const std::byte> bytes, std::uint32_t application) override {
    if (!send_copy || !send_copy(dest, bytes)) return false;
    expect_application_count(bytes, application);
    return true;
  }
  // Routed buffers (hierarchical aggregation) count their messages per destination here.
  std::map<int, std::uint32_t> handed;
  void count_handed(int dest, std::uint32_t application) override { handed[dest] += application; }
};

// Records every submitted buffer (thread-safe).
struct recorder {
  std::mutex lock;
  std::vector<sent> buffers;
  submit_fn fn() {
    return [this](int dest, buffer&& b) {
      std::lock_guard g(lock);
      buffers.push_back({dest, std::move(b)});
    };
  }
  std::size_t size() {
    std::lock_guard g(lock);
    return buffers.size();
  }
};

struct message {
  std::uint16_t id;
  bool control;
  std::vector<std::byte> payload;
};

// Decodes one submitted buffer; fails the test if it does not validate.
std::vector<message> decode(const buffer& b, int source) {
  std::vector<message> out;
  auto error = rill::detail::decode_buffer(
      std::span<const std::byte>(b), source, handlers, [&](const rill::detail::decoded_message& m) {
        out.push_back({m.id, m.control, std::vector<std::byte>(m.payload, m.payload + m.bytes)});
      });
  EXPECT_FALSE(error.has_value()) << *error;
  return out;
}

// A payload that identifies itself: 8-byte sequence number, then bytes derived from it.
std::vector<std::byte> payload_for(std::uint64_t seq, std::size_t bytes) {
  std::vector<std::byte> p(bytes);
  std::memcpy(p.data(), &seq, std::min<std::size_t>(8, bytes));
  for (std::size_t i = 8; i < bytes; ++i) p[i] = static_cast<std::byte>((seq * 131 + i * 7) & 0xff);
  return p;
}
std::uint64_t seq_of(const std::vector<std::byte>& p) {
  std::uint64_t s = 0;
  std::memcpy(&s, p.data(), std::min<std::size_t>(8, p.size()));
  return s;
}

void send(aggregator& agg, int dest, std::uint16_t id, const std::vector<std::byte>& payload) {
  std::byte* out = agg.reserve(dest, id, payload.size());
  ASSERT_NE(out, nullptr);
  if (!payload.empty()) std::memcpy(out, payload.data(), payload.size());
  if (id & wire::control_bit) agg.mark_control(dest);  // as control_send does
  agg.commit(dest);
}

rill::config make_cfg(std::size_t agg_bytes, std::size_t large_bytes, std::uint64_t age_us = 3'600'000'000ull) {
  rill::config c;
  c.agg_bytes = agg_bytes;
  c.large_bytes = large_bytes;
  c.agg_age_us = age_us;
  return c;
}

TEST(Aggregator, MessagesAccumulateUntilTheNextOneWouldOverfill) {
  constexpr std::size_t threshold = 4096;
  constexpr std::size_t payload = 100;
  const std::size_t per = wire::message_header_bytes(payload) + payload;
  const std::size_t fit = (threshold - wire::buffer_header_bytes) / per;
  ASSERT_GT(fit, 2u);
  ASSERT_NE(wire::buffer_header_bytes + fit * per, threshold) << "pick sizes that do not fit exactly";

  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 2, make_cfg(threshold, 16384), agg_sink);
  EXPECT_FALSE(agg.any_buffered());
  for (std::size_t i = 0; i < fit; ++i) {
    send(agg, 1, 3, payload_for(i, payload));
    ASSERT_EQ(rec.size(), 0u) << "a buffer left after " << i + 1 << " of " << fit << " messages";
  }
  EXPECT_TRUE(agg.any_buffered());
  send(agg, 1, 3, payload_for(fit, payload));  // does not fit: the full buffer leaves first
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.buffers[0].dest, 1);
  EXPECT_LE(rec.buffers[0].bytes.size(), threshold);
  auto msgs = decode(rec.buffers[0].bytes, 0);
  ASSERT_EQ(msgs.size(), fit);
  for (std::size_t i = 0; i < fit; ++i) {
    EXPECT_EQ(msgs[i].id, 3);
    EXPECT_FALSE(msgs[i].control);
    EXPECT_TRUE(msgs[i].payload == payload_for(i, payload)) << "message " << i;
  }
  // The overflowing message waits in the next buffer.
  EXPECT_TRUE(agg.any_buffered());
  agg.flush(1);
  ASSERT_EQ(rec.size(), 2u);
  auto rest = decode(rec.buffers[1].bytes, 0);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_TRUE(rest[0].payload == payload_for(fit, payload));
  EXPECT_FALSE(agg.any_buffered());
}

TEST(Aggregator, BufferThatReachesThresholdExactlyLeavesOnCommit) {
  constexpr std::size_t payload = 60;
  const std::size_t per = wire::message_header_bytes(payload) + payload;
  constexpr std::size_t k = 10;
  const std::size_t threshold = wire::buffer_header_bytes + k * per;
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(2, 3, make_cfg(threshold, 16384), agg_sink);
  for (std::size_t i = 0; i + 1 < k; ++i) send(agg, 0, 1, payload_for(i, payload));
  EXPECT_EQ(rec.size(), 0u);
  send(agg, 0, 1, payload_for(k - 1, payload));
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.buffers[0].dest, 0);
  EXPECT_EQ(rec.buffers[0].bytes.size(), threshold);
  auto msgs = decode(rec.buffers[0].bytes, 2);  // the header names the sending rank
  ASSERT_EQ(msgs.size(), k);
  for (std::size_t i = 0; i < k; ++i) EXPECT_EQ(seq_of(msgs[i].payload), i);
  EXPECT_FALSE(agg.any_buffered());
  agg.flush_all();
  EXPECT_EQ(rec.size(), 1u);
}

TEST(Aggregator, DestinationsAreBufferedSeparately) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(1, 4, make_cfg(4096, 16384), agg_sink);
  for (std::uint64_t i = 0; i < 12; ++i)
    send(agg, static_cast<int>(i % 4), static_cast<std::uint16_t>(i % 4), payload_for(i, 24));
  EXPECT_EQ(rec.size(), 0u);
  agg.flush(2);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.buffers[0].dest, 2);
  auto msgs = decode(rec.buffers[0].bytes, 1);
  ASSERT_EQ(msgs.size(), 3u);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(msgs[j].id, 2);
    EXPECT_EQ(seq_of(msgs[j].payload), 2 + 4 * j);
  }
  agg.flush_all();
  ASSERT_EQ(rec.size(), 4u);
  std::map<int, std::size_t> per_dest;
  for (std::size_t b = 1; b < 4; ++b) {
    auto m = decode(rec.buffers[b].bytes, 1);
    per_dest[rec.buffers[b].dest] += m.size();
    for (auto& x : m) EXPECT_EQ(seq_of(x.payload) % 4, static_cast<std::uint64_t>(rec.buffers[b].dest));
  }
  EXPECT_EQ(per_dest, (std::map<int, std::size_t>{{0, 3}, {1, 3}, {3, 3}}));
}

TEST(Aggregator, FlushOnEmptySendsNothing) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 3, make_cfg(4096, 16384), agg_sink);
  agg.flush(0);
  agg.flush(2);
  agg.flush_all();
  EXPECT_EQ(rec.size(), 0u);
  send(agg, 1, 0, payload_for(1, 8));
  agg.flush(0);  // other destination: still nothing
  agg.flush(2);
  EXPECT_EQ(rec.size(), 0u);
  agg.flush(1);
  EXPECT_EQ(rec.size(), 1u);
  agg.flush(1);  // already sent
  agg.flush_all();
  EXPECT_EQ(rec.size(), 1u);
  EXPECT_FALSE(agg.any_buffered());
}

TEST(Aggregator, ZeroBytePayloadsAndControlBitSurvive) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 1, make_cfg(4096, 16384), agg_sink);
  std::byte* p = agg.reserve(0, 5, 0);
  EXPECT_NE(p, nullptr);
  agg.commit(0);
  send(agg, 0, static_cast<std::uint16_t>(6 | wire::control_bit), payload_for(77, 12));
  agg.flush_all();
  ASSERT_EQ(rec.size(), 1u);
  auto msgs = decode(rec.buffers[0].bytes, 0);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].id, 5);
  EXPECT_FALSE(msgs[0].control);
  EXPECT_TRUE(msgs[0].payload.empty());
  EXPECT_EQ(msgs[1].id, 6);
  EXPECT_TRUE(msgs[1].control);
  EXPECT_EQ(seq_of(msgs[1].payload), 77u);
}

TEST(Aggregator, LargePayloadLeavesAloneWithoutDisturbingPartialBuffer) {
  constexpr std::size_t large = 1024;
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(3, 4, make_cfg(4096, large), agg_sink);
  for (std::uint64_t i = 0; i < 3; ++i) send(agg, 1, 2, payload_for(i, 50));
  EXPECT_EQ(rec.size(), 0u);

  const auto big = payload_for(1000, large + 1);
  send(agg, 1, 9, big);
  ASSERT_EQ(rec.size(), 1u) << "a payload above large_bytes must leave at once";
  EXPECT_EQ(rec.buffers[0].dest, 1);
  EXPECT_EQ(wire::message_count(rec.buffers[0].bytes), 1u);
  auto alone = decode(rec.buffers[0].bytes, 3);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].id, 9);
  EXPECT_TRUE(alone[0].payload == big);

  // A very large one (long length header) to another destination, while dest 1 still holds data.
  const auto huge = payload_for(2000, 200000);
  send(agg, 2, 10, huge);
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec.buffers[1].dest, 2);
  auto alone2 = decode(rec.buffers[1].bytes, 3);
  ASSERT_EQ(alone2.size(), 1u);
  EXPECT_TRUE(alone2[0].payload == huge);

  // The partial buffer of dest 1 is intact and keeps accepting messages.
  EXPECT_TRUE(agg.any_buffered());
  send(agg, 1, 2, payload_for(3, 50));
  agg.flush(1);
  ASSERT_EQ(rec.size(), 3u);
  EXPECT_EQ(rec.buffers[2].dest, 1);
  auto partial = decode(rec.buffers[2].bytes, 3);
  ASSERT_EQ(partial.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(partial[i].id, 2);
    EXPECT_TRUE(partial[i].payload == payload_for(i, 50)) << i;
  }
  agg.flush_all();
  EXPECT_EQ(rec.size(), 3u);
}

TEST(Aggregator, PayloadOfExactlyLargeBytesIsAggregated) {
  constexpr std::size_t large = 512;
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 1, make_cfg(4096, large), agg_sink);
  send(agg, 0, 1, payload_for(1, large));
  send(agg, 0, 1, payload_for(2, large));
  EXPECT_EQ(rec.size(), 0u);
  agg.flush(0);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(decode(rec.buffers[0].bytes, 0).size(), 2u);
}

TEST(Aggregator, PayloadAboveThresholdButNotLargeGoesInItsOwnBuffer) {
  constexpr std::size_t threshold = 256;
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 2, make_cfg(threshold, 4096), agg_sink);
  send(agg, 1, 1, payload_for(1, 20));
  send(agg, 1, 1, payload_for(2, 1000));  // cannot join: the 20-byte one leaves first, then this one
  ASSERT_EQ(rec.size(), 2u);
  auto first = decode(rec.buffers[0].bytes, 0);
  auto second = decode(rec.buffers[1].bytes, 0);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(seq_of(first[0].payload), 1u);
  EXPECT_TRUE(second[0].payload == payload_for(2, 1000));
  EXPECT_FALSE(agg.any_buffered());
}

TEST(Aggregator, SubmitMayReenterTheAggregator) {
  // The runtime's submit applies back-pressure by making progress, which can run handlers that
  // send to the same destination: submit must not be called with the destination locked.
  recorder rec;
  aggregator* self = nullptr;
  int reentered = 0;
  function_sink sink([&](int dest, buffer&& b) {
    rec.fn()(dest, std::move(b));
    if (reentered++ == 0) send(*self, dest, 4, payload_for(99, 8));
  });
  aggregator agg(0, 2, make_cfg(256, 4096), sink);
  self = &agg;
  for (std::uint64_t i = 0; i < 20; ++i) send(agg, 1, 1, payload_for(i, 40));
  agg.flush_all();
  std::size_t total = 0;
  bool saw_reentrant = false;
  for (auto& s : rec.buffers)
    for (auto& m : decode(s.bytes, 0)) {
      ++total;
      saw_reentrant |= m.id == 4 && seq_of(m.payload) == 99;
    }
  EXPECT_EQ(total, 21u);
  EXPECT_TRUE(saw_reentrant);
}

TEST(Aggregator, FlushAgedSendsOnlyOldBuffers) {
  constexpr std::uint64_t age_us = 3'600'000'000ull;  // one hour: no real delay can make a buffer this old
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 3, make_cfg(4096, 16384, age_us), agg_sink);
  agg.flush_aged(rill::detail::steady_now_ns() + age_us * 2000);  // nothing buffered: nothing sent
  EXPECT_EQ(rec.size(), 0u);

  send(agg, 2, 1, payload_for(5, 16));
  const std::uint64_t after = rill::detail::steady_now_ns();
  agg.flush_aged(after);  // the buffer is younger than the threshold
  EXPECT_EQ(rec.size(), 0u);
  agg.flush_aged(after + age_us * 1000);  // certainly old enough
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.buffers[0].dest, 2);
  auto msgs = decode(rec.buffers[0].bytes, 0);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(seq_of(msgs[0].payload), 5u);
  EXPECT_FALSE(agg.any_buffered());
  agg.flush_aged(after + age_us * 4000);
  EXPECT_EQ(rec.size(), 1u);
}

TEST(Aggregator, FlushAgedWithNowTakenBeforeTheBufferStartedDoesNotSend) {
  // A worker reads the clock, then another thread starts a buffer, then the worker calls
  // flush_aged with its (slightly older) reading: that buffer has age zero, not 2^64 - epsilon.
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 2, make_cfg(4096, 16384, 200), agg_sink);
  const std::uint64_t before = rill::detail::steady_now_ns();
  send(agg, 1, 1, payload_for(1, 16));
  agg.flush_aged(before);
  EXPECT_EQ(rec.size(), 0u) << "flush_aged(now) sent a buffer that started after now";
}

TEST(Aggregator, ZeroAgeThresholdFlushesAnyBufferedData) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 2, make_cfg(4096, 16384, 0), agg_sink);
  send(agg, 0, 1, payload_for(1, 16));
  agg.flush_aged(rill::detail::steady_now_ns());
  EXPECT_EQ(rec.size(), 1u);
}

TEST(Aggregator, ConcurrentSendersEveryMessageArrivesOnce) {
  constexpr int threads = 4;
  constexpr int dests = 3;
  constexpr std::uint64_t per_thread = 20000;
  constexpr std::size_t large = 1024;
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(1, dests, make_cfg(2048, large), agg_sink);

  auto size_of = [](std::uint64_t seq) -> std::size_t {
    if (seq % 997 == 0) return large + 1 + seq % 300;  // now and then a large one
    return 8 + seq % 57;
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < per_thread; ++i) {
        const std::uint64_t seq = static_cast<std::uint64_t>(t) * per_thread + i;
        const int dest = static_cast<int>(seq % dests);
        const auto p = payload_for(seq, size_of(seq));
        std::byte* out = agg.reserve(dest, static_cast<std::uint16_t>(t), p.size());
        std::memcpy(out, p.data(), p.size());
        agg.commit(dest);
      }
    });
  }
  for (auto& t : ts) t.join();
  agg.flush_all();
  EXPECT_FALSE(agg.any_buffered());

  const std::uint64_t total = threads * per_thread;
  std::vector<int> seen(total, 0);
  std::size_t decoded = 0;
  std::size_t bad = 0;
  for (auto& s : rec.buffers) {
    for (auto& m : decode(s.bytes, 1)) {
      ++decoded;
      const std::uint64_t seq = seq_of(m.payload);
      if (seq >= total || m.payload != payload_for(seq, size_of(seq)) || static_cast<int>(seq % dests) != s.dest ||
          m.id != seq / per_thread) {
        ++bad;
        continue;
      }
      ++seen[seq];
    }
  }
  EXPECT_EQ(decoded, total);
  EXPECT_EQ(bad, 0u);
  std::size_t wrong = 0;
  for (std::uint64_t i = 0; i < total; ++i)
    if (seen[i] != 1 && ++wrong <= 10) ADD_FAILURE() << "message " << i << " arrived " << seen[i] << " times";
  EXPECT_EQ(wrong, 0u);
}

}  // namespace

namespace {

// A transport that can send copies (a shared-memory ring): accepts them while `accept` is set.
struct copy_recorder {
  bool accept = true;
  std::vector<sent> copies;
  send_copy_fn fn() {
    return [this](int dest, std::span<const std::byte> bytes) {
      if (!accept) return false;
      copies.push_back({dest, buffer(bytes.begin(), bytes.end())});
      return true;
    };
  }
};

TEST(Aggregator, BuffersLeaveAsCopiesWhenTheTransportTakesThem) {
  recorder rec;
  copy_recorder copies;
  function_sink agg_sink(rec.fn(), copies.fn());
  aggregator agg(0, 3, make_cfg(4096, 16384), agg_sink);
  send(agg, 2, 5, payload_for(1, 40));
  send(agg, 2, 5, payload_for(2, 40));
  agg.flush(2);
  EXPECT_EQ(rec.size(), 0u);  // no buffer was handed over
  ASSERT_EQ(copies.copies.size(), 1u);
  EXPECT_EQ(copies.copies[0].dest, 2);
  auto msgs = decode(copies.copies[0].bytes, 0);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_TRUE(msgs[0].payload == payload_for(1, 40));
  EXPECT_TRUE(msgs[1].payload == payload_for(2, 40));
  EXPECT_FALSE(agg.any_buffered());
  // The kept buffer starts afresh: the next message travels alone.
  send(agg, 2, 6, payload_for(3, 8));
  agg.flush(2);
  ASSERT_EQ(copies.copies.size(), 2u);
  auto next = decode(copies.copies[1].bytes, 0);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].id, 6);
  EXPECT_TRUE(next[0].payload == payload_for(3, 8));
}

TEST(Aggregator, ARefusedCopyLeavesAsABuffer) {
  recorder rec;
  copy_recorder copies;
  copies.accept = false;  // the ring is full
  function_sink agg_sink(rec.fn(), copies.fn());
  aggregator agg(0, 2, make_cfg(4096, 16384), agg_sink);
  send(agg, 1, 5, payload_for(7, 40));
  agg.flush(1);
  EXPECT_TRUE(copies.copies.empty());
  ASSERT_EQ(rec.size(), 1u);
  auto msgs = decode(rec.buffers[0].bytes, 0);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_TRUE(msgs[0].payload == payload_for(7, 40));
  EXPECT_FALSE(agg.any_buffered());
}

// ---- Hierarchical aggregation (--rill:ranks-per-node): messages/node_routes.hpp, routed_wire.hpp.

using rill::detail::node_routes;

rill::config node_cfg(int per_node, std::size_t agg_bytes = 4096, std::size_t large_bytes = 16384) {
  rill::config c = make_cfg(agg_bytes, large_bytes);
  c.ranks_per_node = per_node;
  return c;
}

// What a rank of a node receives in one buffer from `source`: its messages and those it forwards,
// by destination rank, with the first sequence of each destination's messages.
struct delivered {
  std::map<int, std::vector<message>> messages;
  std::map<int, std::uint32_t> first_sequence;
};

// Receives buffer b, sent by `source` to `receiver`, as the runtime does: an ordinary buffer runs
// there; a routed one is checked and split there, and each forwarded piece is checked as the rank
// it is for checks it (transport source: the receiver).
delivered receive(const buffer& b, int source, int receiver, int ranks, int per_node) {
  delivered out;
  if (wire::get<std::uint32_t>(b.data()) != wire::magic_routed) {
    out.messages[receiver] = decode(b, source);
    out.first_sequence[receiver] = wire::first_sequence(b.data());
    return out;
  }
  const node_routes at(receiver, ranks, per_node);
  std::vector<rill::detail::routed_share> shares;
  auto error = rill::detail::validate_routed(b, source, receiver, at, handlers, shares);
  EXPECT_FALSE(error.has_value()) << *error;
  if (error) return out;
  std::vector<buffer> pieces(shares.size());
  rill::detail::split_routed(b, pieces);
  for (std::size_t to = 0; to < shares.size(); ++to) {
    if (shares[to].messages == 0) continue;
    const int dest = at.rank_at(at.node_of(receiver), static_cast<int>(to));
    const buffer& piece = pieces[to];
    if (dest != receiver) {
      const node_routes there(dest, ranks, per_node);
      auto checked = rill::detail::validate_buffer(piece, receiver, handlers, &there, dest);
      EXPECT_TRUE(std::holds_alternative<rill::detail::buffer_counts>(checked)) << std::get<std::string>(checked);
      if (!std::holds_alternative<rill::detail::buffer_counts>(checked)) continue;
      const auto counts = std::get<rill::detail::buffer_counts>(checked);
      EXPECT_EQ(counts.source, source) << "a forwarded buffer names the rank that wrote it";
      EXPECT_EQ(counts.messages, shares[to].messages);
      EXPECT_EQ(counts.application, shares[to].application);
    }
    std::size_t pos = wire::buffer_header_bytes;
    for (std::uint32_t i = wire::message_count(piece.data()); i > 0; --i) {
      const auto m = rill::detail::next_message(piece, pos);
      out.messages[dest].push_back({m.id, m.control, std::vector<std::byte>(m.payload, m.payload + m.bytes)});
    }
    out.first_sequence[dest] = wire::first_sequence(piece.data());
  }
  return out;
}

TEST(NodeRoutes, RanksFormNodesOfKAndASmallerLastNodeTakesItsLastRankAsPeer) {
  const node_routes r(2, 7, 3);  // nodes {0,1,2} {3,4,5} {6}
  EXPECT_EQ(r.nodes(), 3);
  EXPECT_EQ(r.node_of(5), 1);
  EXPECT_EQ(r.node_size(2), 1);
  EXPECT_EQ(r.route_of(1), 1);      // a rank of this node: by its index
  EXPECT_EQ(r.route_of(4), 3 + 1);  // another node's rank: by its node
  EXPECT_EQ(r.peer_on(1), 5);       // the rank with this rank's index there
  EXPECT_EQ(r.peer_on(2), 6);       // ... or the last of a smaller node
  const node_routes one(5, 8, 1);
  EXPECT_EQ(one.nodes(), 8);
  EXPECT_EQ(one.peer_on(one.node_of(3)), 3) << "one rank per node: every buffer goes to its rank";
}

TEST(HierarchicalAggregation, ABufferForOneRankOfAnotherNodeGoesStraightToIt) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 8, node_cfg(4), agg_sink);
  for (std::uint64_t i = 0; i < 3; ++i) send(agg, 6, 4, payload_for(i, 24));
  agg.flush(6);
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.buffers[0].dest, 6);
  EXPECT_EQ(wire::get<std::uint32_t>(rec.buffers[0].bytes.data()), wire::magic) << "an ordinary buffer";
  const auto msgs = decode(rec.buffers[0].bytes, 0);
  ASSERT_EQ(msgs.size(), 3u);
  for (std::uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(msgs[i].payload == payload_for(i, 24));
  EXPECT_TRUE(agg_sink.handed.empty()) << "counted as the buffer left, not per destination";
}

TEST(HierarchicalAggregation, ABufferForSeveralRanksOfANodeGoesToThePeerWhichSplitsIt) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(1, 8, node_cfg(4), agg_sink);  // nodes {0..3} {4..7}; rank 1's peer there: 5
  const std::vector<int> order{4, 5, 6, 4, 7, 5};
  for (std::size_t i = 0; i < order.size(); ++i) {
    const bool control = order[i] == 6;
    send(agg, order[i], static_cast<std::uint16_t>(control ? 9 | wire::control_bit : 9), payload_for(i, 16 + i));
  }
  EXPECT_EQ(rec.size(), 0u);
  agg.flush(7);  // any rank of the node: the node's buffer leaves
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec.buffers[0].dest, 5);
  EXPECT_EQ(wire::get<std::uint32_t>(rec.buffers[0].bytes.data()), wire::magic_routed);
  EXPECT_EQ(agg_sink.handed, (std::map<int, std::uint32_t>{{4, 2}, {5, 2}, {6, 0}, {7, 1}}));

  const delivered got = receive(rec.buffers[0].bytes, 1, 5, 8, 4);
  const std::map<int, std::vector<std::size_t>> expected{{4, {0, 3}}, {5, {1, 5}}, {6, {2}}, {7, {4}}};
  ASSERT_EQ(got.messages.size(), expected.size());
  for (const auto& [dest, indexes] : expected) {
    const auto& msgs = got.messages.at(dest);
    ASSERT_EQ(msgs.size(), indexes.size()) << "to rank " << dest;
    for (std::size_t j = 0; j < indexes.size(); ++j) {
      EXPECT_TRUE(msgs[j].payload == payload_for(indexes[j], 16 + indexes[j])) << "to rank " << dest;
      EXPECT_EQ(msgs[j].control, dest == 6);
    }
    EXPECT_EQ(got.first_sequence.at(dest), 0u);
  }

  // Each destination's sequence goes on from where its messages stopped.
  send(agg, 6, 9, payload_for(10, 8));
  send(agg, 4, 9, payload_for(11, 8));
  agg.flush_all();
  ASSERT_EQ(rec.size(), 2u);
  const delivered next = receive(rec.buffers[1].bytes, 1, 5, 8, 4);
  EXPECT_EQ(next.first_sequence.at(6), 1u);
  EXPECT_EQ(next.first_sequence.at(4), 2u);
}

TEST(HierarchicalAggregation, RoutedBuffersKeepToTheThresholdAndLoseNothing) {
  constexpr std::size_t threshold = 512;
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 6, node_cfg(3, threshold), agg_sink);  // nodes {0,1,2} {3,4,5}
  constexpr std::uint64_t count = 300;
  for (std::uint64_t i = 0; i < count; ++i) send(agg, 3 + static_cast<int>(i % 3), 2, payload_for(i, 10 + i % 40));
  agg.flush_all();
  std::map<int, std::vector<std::uint64_t>> arrived;
  std::map<int, std::uint32_t> next_sequence;
  for (const sent& s : rec.buffers) {
    EXPECT_LE(s.bytes.size(), threshold);
    EXPECT_TRUE(s.dest >= 3 && s.dest <= 5);
    const delivered got = receive(s.bytes, 0, s.dest, 6, 3);
    for (const auto& [dest, msgs] : got.messages) {
      EXPECT_EQ(got.first_sequence.at(dest), next_sequence[dest]) << "sequences to rank " << dest << " go on";
      next_sequence[dest] += static_cast<std::uint32_t>(msgs.size());
      for (const message& m : msgs) arrived[dest].push_back(seq_of(m.payload));
    }
  }
  for (int dest = 3; dest <= 5; ++dest) {
    std::vector<std::uint64_t> expected;
    for (std::uint64_t i = static_cast<std::uint64_t>(dest - 3); i < count; i += 3) expected.push_back(i);
    EXPECT_EQ(arrived[dest], expected) << "to rank " << dest;
  }
}

TEST(HierarchicalAggregation, AMessageWithALongLengthSurvivesTheRewrite) {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 4, node_cfg(2, 200'000, 150'000), agg_sink);  // nodes {0,1} {2,3}
  send(agg, 2, 1, payload_for(1, 70'000));                        // above 0xFFFF: the long header
  send(agg, 3, 1, payload_for(2, 10));
  send(agg, 2, 1, payload_for(3, 5));
  agg.flush_all();
  ASSERT_EQ(rec.size(), 1u);
  const delivered got = receive(rec.buffers[0].bytes, 0, rec.buffers[0].dest, 4, 2);
  ASSERT_EQ(got.messages.at(2).size(), 2u);
  EXPECT_TRUE(got.messages.at(2)[0].payload == payload_for(1, 70'000));
  EXPECT_TRUE(got.messages.at(2)[1].payload == payload_for(3, 5));
  ASSERT_EQ(got.messages.at(3).size(), 1u);
  EXPECT_TRUE(got.messages.at(3)[0].payload == payload_for(2, 10));
}

TEST(HierarchicalAggregation, ARankKeepsAQueuePerRankOfItsNodeAndPerOtherNode) {
  for (const int per_node : {1, 8}) {
    recorder rec;
    function_sink agg_sink(rec.fn());
    aggregator agg(9, 256, node_cfg(per_node), agg_sink);
    for (int d = 0; d < 256; ++d)
      if (d != 9) send(agg, d, 1, payload_for(static_cast<std::uint64_t>(d), 8));
    agg.flush_all();
    EXPECT_EQ(agg.queues_used(), per_node == 1 ? 255 : 7 + 31) << per_node << " ranks per node";
  }
}

// A valid routed buffer from rank 0 to rank 3 (nodes {0,1,2} {3,4,5} {6}) for ranks 3 and 4.
buffer routed_sample() {
  recorder rec;
  function_sink agg_sink(rec.fn());
  aggregator agg(0, 7, node_cfg(3), agg_sink);
  send(agg, 3, 1, payload_for(1, 12));
  send(agg, 4, 1, payload_for(2, 12));
  send(agg, 3, 1, payload_for(3, 12));
  agg.flush_all();
  EXPECT_EQ(rec.size(), 1u);
  return rec.buffers.at(0).bytes;
}

std::string routed_error(const buffer& b, int source, int receiver) {
  const node_routes at(receiver, 7, 3);
  std::vector<rill::detail::routed_share> shares;
  auto error = rill::detail::validate_routed(b, source, receiver, at, handlers, shares);
  return error.value_or("");
}

TEST(HierarchicalAggregation, ABadRoutedBufferIsRefusedNamingWhatIsWrong) {
  const buffer good = routed_sample();
  ASSERT_EQ(routed_error(good, 0, 3), "");
  EXPECT_NE(routed_error(good, 1, 3).find("claims to come from rank 0"), std::string::npos);
  EXPECT_NE(routed_error(good, 0, 6).find("is for node 1"), std::string::npos);
  buffer truncated(good.begin(), good.end() - 3);
  EXPECT_NE(routed_error(truncated, 0, 3).find("truncated"), std::string::npos);
  // The first message names a rank index beyond the node's.
  buffer beyond = good;
  wire::put<std::uint16_t>(beyond.data() + wire::buffer_header_bytes, wire::first_to_bit | 5);
  EXPECT_NE(routed_error(beyond, 0, 3).find("which has 3 ranks"), std::string::npos);
  // The first message to a rank is not marked as such.
  buffer unmarked = good;
  wire::put<std::uint16_t>(unmarked.data() + wire::buffer_header_bytes, 0);
  EXPECT_NE(routed_error(unmarked, 0, 3).find("not marked"), std::string::npos);
  // A routed buffer from a rank of the receiver's own node.
  buffer own = good;
  wire::put<std::uint32_t>(own.data() + 4, 4);
  EXPECT_NE(routed_error(own, 4, 3).find("own node"), std::string::npos);
}

TEST(HierarchicalAggregation, AForwardedBufferIsAcceptedOnlyThroughARankOfTheReceiversNode) {
  const buffer routed = routed_sample();
  const delivered got = receive(routed, 0, 3, 7, 3);
  ASSERT_EQ(got.messages.at(4).size(), 1u);
  std::vector<rill::detail::routed_share> shares;
  const node_routes at3(3, 7, 3);
  ASSERT_FALSE(rill::detail::validate_routed(routed, 0, 3, at3, handlers, shares).has_value());
  std::vector<buffer> pieces(shares.size());
  rill::detail::split_routed(routed, pieces);
  const buffer& for4 = pieces[1];
  const node_routes at4(4, 7, 3);
  auto accepted = [&](int transport_source, const node_routes* routes) {
    return std::holds_alternative<rill::detail::buffer_counts>(
        rill::detail::validate_buffer(for4, transport_source, handlers, routes, 4));
  };
  EXPECT_TRUE(accepted(3, &at4));
  EXPECT_FALSE(accepted(6, &at4)) << "forwarded by a rank of another node";
  EXPECT_FALSE(accepted(0, &at4)) << "forwarded by the rank that wrote it";
  EXPECT_FALSE(accepted(3, nullptr)) << "without nodes, no buffer is forwarded";
  buffer own_node_writer = for4;
  wire::put<std::uint32_t>(own_node_writer.data() + 4, 5);
  EXPECT_FALSE(std::holds_alternative<rill::detail::buffer_counts>(
      rill::detail::validate_buffer(own_node_writer, 3, handlers, &at4, 4)))
      << "written on the receiver's own node: it would have come straight";
}

}  // namespace
