// How many application messages (all but the runtime's control messages) a rank handed to its
// endpoint for each rank, and how many it received from each: what a delivery audit compares
// (core/delivery_audit.hpp). Counted per buffer, with one relaxed add on each side.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace rill::detail {

class delivery_counts {
 public:
  explicit delivery_counts(int ranks)
      : handed_(new std::atomic<std::uint64_t>[static_cast<std::size_t>(ranks)]()),
        received_(new std::atomic<std::uint64_t>[static_cast<std::size_t>(ranks)]()) {}

  void add_handed(int dest, std::uint32_t messages) {
    handed_[static_cast<std::size_t>(dest)].fetch_add(messages, std::memory_order_relaxed);
  }
  void add_received(int source, std::uint32_t messages) {
    received_[static_cast<std::size_t>(source)].fetch_add(messages, std::memory_order_relaxed);
  }
  std::uint64_t handed_to(int dest) const {
    return handed_[static_cast<std::size_t>(dest)].load(std::memory_order_relaxed);
  }
  std::uint64_t received_from(int source) const {
    return received_[static_cast<std::size_t>(source)].load(std::memory_order_relaxed);
  }

 private:
  std::unique_ptr<std::atomic<std::uint64_t>[]> handed_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> received_;
};

}  // namespace rill::detail
