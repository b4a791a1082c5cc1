// A single-producer single-consumer ring of variable-size records in memory that two processes
// (or threads) share: how ranks on one node pass buffers without MPI (mpi_transport.cpp).
//
// Layout: the producer's count of bytes written and the consumer's count of bytes read, each on a
// cache line of its own, then `capacity` bytes of records. A record is an 8-byte header (its
// payload length) and the payload, padded to 8 bytes; a record never wraps: when it does not fit
// before the end, the producer writes a skip header there and starts it at offset 0.
//
// Why a ring and not MPI for ranks on one node: a message through MPI costs an MPI_Isend, a
// matched receive, a re-post and request bookkeeping on top of the copy, about 0.5 us per hop
// here; through the ring it is a copy and a release store, and the receiver sees it with one load.
//
// The caller serialises producers (one try_write at a time, through one byte_ring object) and
// consumers (likewise). The memory must read as zeroes before either side starts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace rill::detail {

class byte_ring {
 public:
  static constexpr std::size_t header_bytes = 128;  // the two counters, a cache line each
  // Bytes of shared memory a ring of `capacity` bytes of records takes.
  static constexpr std::size_t bytes_for(std::size_t capacity) { return header_bytes + capacity; }

  // `capacity`: a multiple of 8; `memory`: bytes_for(capacity) bytes, 64-byte aligned.
  byte_ring(std::byte* memory, std::size_t capacity)
      : written_(reinterpret_cast<std::uint64_t*>(memory)),
        read_(reinterpret_cast<std::uint64_t*>(memory + 64)),
        data_(memory + header_bytes),
        capacity_(capacity) {}

  // The largest payload try_write takes: a quarter of the ring, so that a full-size record always
  // fits once the consumer has caught up, whatever the wrap point.
  std::size_t max_payload() const { return capacity_ / 4 - record_header; }

  // Producer: appends a record holding `payload` (at most max_payload() bytes). False when the
  // ring has no room for it now.
  bool try_write(std::span<const std::byte> payload) {
    const std::uint64_t w = written_here_;
    const std::size_t at = w % capacity_;
    const std::size_t size = record_size(payload.size());
    const std::size_t skip = at + size > capacity_ ? capacity_ - at : 0;
    if (w + skip + size - read_seen_ > capacity_) {
      read_seen_ = load(read_);
      if (w + skip + size - read_seen_ > capacity_) return false;
    }
    std::uint64_t head = 0;
    if (skip != 0) {
      head = skip_mark;
      std::memcpy(data_ + at, &head, record_header);
    }
    const std::size_t start = (w + skip) % capacity_;
    head = payload.size();
    std::memcpy(data_ + start, &head, record_header);
    if (!payload.empty()) std::memcpy(data_ + start + record_header, payload.data(), payload.size());
    written_here_ = w + skip + size;
    store(written_, written_here_);  // publishes the record
    return true;
  }

  // Consumer: true when a record is waiting.
  // Consumer, or any thread that only asks (the idle check of another worker).
  bool has_data() const { return load(written_) != load(read_); }

  // Consumer: calls f(payload) for up to `max` waiting records, oldest first (the span is valid
  // during the call only), then frees their space. Returns how many it read.
  template <class F>
  std::size_t read(F&& f, std::size_t max) {
    std::uint64_t r = read_here_;
    const std::uint64_t w = load(written_);
    std::size_t n = 0;
    while (r != w && n < max) {
      const std::size_t at = r % capacity_;
      std::uint64_t head = 0;
      std::memcpy(&head, data_ + at, record_header);
      if (head == skip_mark) {
        r += capacity_ - at;
        continue;
      }
      f(std::span<const std::byte>(data_ + at + record_header, static_cast<std::size_t>(head)));
      r += record_size(static_cast<std::size_t>(head));
      ++n;
    }
    if (r != read_here_) {
      read_here_ = r;
      store(read_, r);
    }
    return n;
  }

 private:
  static constexpr std::size_t record_header = 8;
  static constexpr std::uint64_t skip_mark = ~std::uint64_t{0};
  static std::size_t record_size(std::size_t payload) { return record_header + (payload + 7) / 8 * 8; }
  static std::uint64_t load(std::uint64_t* p) {
    return std::atomic_ref<std::uint64_t>(*p).load(std::memory_order_acquire);
  }
  static void store(std::uint64_t* p, std::uint64_t v) {
    std::atomic_ref<std::uint64_t>(*p).store(v, std::memory_order_release);
  }

  std::uint64_t* written_;  // total bytes the producer has written (skips included)
  std::uint64_t* read_;     // total bytes the consumer has freed
  std::byte* data_;
  std::size_t capacity_;
  // Each side's own count, also kept here: reading it from the shared line would fetch that line
  // back from the other side's cache, which polls it (a cache miss per message).
  std::uint64_t written_here_ = 0;  // producer
  std::uint64_t read_here_ = 0;     // consumer
  std::uint64_t read_seen_ = 0;     // producer: the consumer's count when last loaded
};

}  // namespace rill::detail
