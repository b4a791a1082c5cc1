// The fibers ready to run on one worker, oldest first: a growable circular array of records,
// owner thread only.
//
// An array rather than a list linked through the records: the worker prefetches what resuming the
// next few fibers will read (switch_ahead, record_ahead), which a list could only find by loading
// each record in turn -- one cache miss after another once thousands of fibers wait.
#pragma once

#include <cstddef>
#include <memory>

#include "scheduler/fiber.hpp"

namespace rill::detail {

class ready_ring {
 public:
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }

  void push(fiber_rec* f) {
    if (tail_ - head_ == mask_ + 1) grow();
    slots_[tail_++ & mask_] = f;
  }

  // The oldest; the ring must not be empty.
  fiber_rec* pop() {
    fiber_rec* f = slots_[head_++ & mask_];
    if (!f) __builtin_unreachable();  // only records are pushed (spares a test on the switch path)
    return f;
  }

  // The i-th oldest (0: the next pop), or nullptr past the newest.
  fiber_rec* peek(std::size_t i) const { return i < tail_ - head_ ? slots_[(head_ + i) & mask_] : nullptr; }

 private:
  [[gnu::noinline, gnu::cold]] void grow() {
    const std::size_t bigger = slots_ ? 2 * (mask_ + 1) : 64;
    auto slots = std::make_unique<fiber_rec*[]>(bigger);
    for (std::size_t i = 0; i < size(); ++i) slots[i] = peek(i);
    tail_ -= head_;
    head_ = 0;
    slots_ = std::move(slots);
    mask_ = bigger - 1;
  }

  std::unique_ptr<fiber_rec*[]> slots_;
  std::size_t mask_ = std::size_t(-1);  // capacity - 1 (a power of two); with no slots, grow at once
  std::size_t head_ = 0;                // free-running indices: slot i is slots_[i & mask_]
  std::size_t tail_ = 0;
};

}  // namespace rill::detail
