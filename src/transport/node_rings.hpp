// The shared-memory rings between the MPI ranks of one node (--rill:node-ring): one byte_ring to
// each other rank of the node and one from it, so that eager-sized buffers pass without an MPI
// call on either side. The MPI endpoint (mpi_endpoint.hpp) sends through them what fits and reads
// them on every poll; mpi_transport.cpp maps their memory at start-up.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/spinlock.hpp"
#include "common/wake_word.hpp"
#include "transport/byte_ring.hpp"

namespace rill::detail {

class node_rings {
 public:
  // A ring to `peer` at `to` and one from it at `from`, each of byte_ring::bytes_for(capacity)
  // bytes, of which the ring to `peer` carries buffers up to `largest` bytes; `peer` sleeps on
  // `wakes` (its endpoint's sleep_word). Called before any send or poll; `ranks` is the size of
  // the communicator.
  void add(int peer, int ranks, std::byte* to, std::byte* from, std::size_t capacity, std::size_t largest,
           wake_word& wakes) {
    if (out_.empty()) out_.resize(static_cast<std::size_t>(ranks));
    out_[static_cast<std::size_t>(peer)] = std::make_unique<out_ring>(to, capacity, largest, wakes);
    in_.push_back(std::make_unique<in_ring>(peer, from, capacity));
  }

  // Whether there is a ring to every other rank: then MPI carries only what rings cannot take.
  bool reach_all(int ranks) const { return static_cast<int>(in_.size()) == ranks - 1; }

  // The largest buffer the ring to `dest` carries (0: no ring).
  std::size_t limit(int dest) const {
    const out_ring* r = out(dest);
    return r ? r->limit : 0;
  }

  // Writes one buffer to `dest`'s ring and wakes `dest` if it sleeps; false when there is no
  // ring, the buffer is too large, or the ring is full (then the buffer goes through MPI, and
  // order is not promised).
  bool try_write(int dest, std::span<const std::byte> bytes) {
    out_ring* r = out(dest);
    if (!r || bytes.size() > r->limit) return false;
    {
      std::lock_guard g(r->lock);
      if (!r->ring.try_write(bytes)) return false;
    }
    r->wakes.notify();
    return true;
  }

  // Tells `dest`, which may poll MPI seldom, that MPI carries something for it: an empty record.
  // When the ring is full there is no room for it, but then the receiver is busy draining the
  // ring, and its periodic MPI poll finds the buffer.
  void ring_doorbell(int dest) {
    out_ring* r = out(dest);
    if (!r) return;
    {
      std::lock_guard g(r->lock);
      if (!r->ring.try_write({})) return;
    }
    r->wakes.notify();
  }

  bool have_data() const {
    for (const auto& in : in_)
      if (in->ring.has_data()) return true;
    return false;
  }

  // Reads up to `max` records from the rings, calling on_record(source, bytes) for each (empty
  // bytes: a doorbell); returns how many it read. One thread reads at a time: another that finds
  // the rings being read returns 0.
  template <class F>
  std::size_t read(std::size_t max, F&& on_record) {
    // Look before taking the reader's flag: an atomic exchange on every idle poll costs more
    // than the loads.
    if (!have_data() || reader_.test_and_set(std::memory_order_acquire)) return 0;
    std::size_t n = 0;
    for (auto& in : in_) {
      if (n >= max) break;
      n += in->ring.read([&](std::span<const std::byte> p) { on_record(in->source, p); }, max - n);
    }
    reader_.clear(std::memory_order_release);
    return n;
  }

 private:
  struct out_ring {
    out_ring(std::byte* memory, std::size_t capacity, std::size_t largest, wake_word& dest_wakes)
        : ring(memory, capacity), limit(std::min(ring.max_payload(), largest)), wakes(dest_wakes) {}
    byte_ring ring;
    // Larger buffers (payloads that travel alone) go through MPI: its rendezvous receives them
    // into recycled buffers, where a ring would copy them twice (measured: 64 KiB payloads at
    // 0.6 of MPI's bandwidth through the ring).
    std::size_t limit;
    spinlock lock;     // the workers of this rank are the ring's producers, one at a time
    wake_word& wakes;  // what the destination's idle workers sleep on, in its part of the window
  };
  struct in_ring {
    in_ring(int from, std::byte* memory, std::size_t capacity) : source(from), ring(memory, capacity) {}
    int source;
    byte_ring ring;
  };

  out_ring* out(int dest) const { return out_.empty() ? nullptr : out_[static_cast<std::size_t>(dest)].get(); }

  std::vector<std::unique_ptr<out_ring>> out_;  // by destination rank; null: not on this node
  std::vector<std::unique_ptr<in_ring>> in_;
  std::atomic_flag reader_ = ATOMIC_FLAG_INIT;  // held by the thread reading the rings
};

}  // namespace rill::detail
