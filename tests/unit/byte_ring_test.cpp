// Unit tests of the shared-memory record ring (src/transport/byte_ring.hpp) that carries messages
// between ranks of one node under the mpi transport.
#include "transport/byte_ring.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace {

using rill::detail::byte_ring;

struct ring_memory {
  explicit ring_memory(std::size_t capacity)
      : bytes(new (std::align_val_t{64}) std::byte[byte_ring::bytes_for(capacity)]()) {}
  ~ring_memory() { operator delete[](bytes, std::align_val_t{64}); }
  std::byte* bytes;
};

std::vector<std::byte> pattern(std::size_t size, std::uint32_t seed) {
  std::vector<std::byte> v(size);
  for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::byte>((seed * 131 + i * 7) & 0xff);
  return v;
}

TEST(ByteRing, RecordsComeOutInOrderWithTheirBytes) {
  ring_memory mem(4096);
  byte_ring producer(mem.bytes, 4096), consumer(mem.bytes, 4096);
  EXPECT_FALSE(consumer.has_data());
  for (std::uint32_t i = 0; i < 5; ++i) ASSERT_TRUE(producer.try_write(pattern(i * 13, i)));
  EXPECT_TRUE(consumer.has_data());
  std::uint32_t seen = 0;
  const std::size_t n = consumer.read(
      [&](std::span<const std::byte> p) {
        EXPECT_EQ(std::vector<std::byte>(p.begin(), p.end()), pattern(seen * 13, seen));
        ++seen;
      },
      100);
  EXPECT_EQ(n, 5u);
  EXPECT_FALSE(consumer.has_data());
}

TEST(ByteRing, AFullRingRefusesUntilTheConsumerFreesSpace) {
  ring_memory mem(1024);
  byte_ring producer(mem.bytes, 1024), consumer(mem.bytes, 1024);
  const auto big = pattern(producer.max_payload(), 1);
  int written = 0;
  while (producer.try_write(big)) ++written;
  EXPECT_EQ(written, 4);  // records of a quarter of the ring each (header included)
  EXPECT_EQ(consumer.read([](std::span<const std::byte>) {}, 1), 1u);
  EXPECT_TRUE(producer.try_write(big));  // the freed record's room, at the start again
  EXPECT_FALSE(producer.try_write(big));
  EXPECT_EQ(consumer.read([&](std::span<const std::byte> p) { EXPECT_EQ(p.size(), big.size()); }, 100), 4u);
}

TEST(ByteRing, ReadStopsAtMax) {
  ring_memory mem(1024);
  byte_ring producer(mem.bytes, 1024), consumer(mem.bytes, 1024);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(producer.try_write(pattern(8, 0)));
  EXPECT_EQ(consumer.read([](std::span<const std::byte>) {}, 3), 3u);
  EXPECT_TRUE(consumer.has_data());
  EXPECT_EQ(consumer.read([](std::span<const std::byte>) {}, 3), 1u);
}

// A producer thread and a consumer thread, random sizes (many wraps): every record arrives once,
// in order, intact.
TEST(ByteRing, ConcurrentProducerAndConsumerLoseNothing) {
  constexpr std::size_t capacity = 8192;
  constexpr std::uint32_t records = 50'000;
  ring_memory mem(capacity);
  byte_ring producer(mem.bytes, capacity), consumer(mem.bytes, capacity);
  std::mt19937 sizes(7);
  std::vector<std::size_t> size_of(records);
  for (auto& s : size_of) s = sizes() % (producer.max_payload() + 1);
  std::thread t([&] {
    for (std::uint32_t i = 0; i < records; ++i) {
      const auto p = pattern(size_of[i], i);
      while (!producer.try_write(p)) std::this_thread::yield();
    }
  });
  std::uint32_t next = 0;
  bool intact = true;
  while (next < records) {
    consumer.read(
        [&](std::span<const std::byte> p) {
          if (std::vector<std::byte>(p.begin(), p.end()) != pattern(size_of[next], next)) intact = false;
          ++next;
        },
        64);
  }
  t.join();
  EXPECT_TRUE(intact);
  EXPECT_EQ(next, records);
  EXPECT_FALSE(consumer.has_data());
}

}  // namespace
