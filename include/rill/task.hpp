// Local tasks: spawn work on the calling rank's workers, yield, and wait for a count of them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "rill/detail/finish_hooks.hpp"
#include "rill/detail/task_record.hpp"
#include "rill/detail/waiter.hpp"

namespace rill {

// Runs fn() as a task on the calling rank; idle workers of the rank may steal it. Inside
// rill::finish the task belongs to the finish scope (see rill/finish.hpp).
template <class F>
void spawn(F&& fn) {
  detail::task_submit(detail::make_counted_task("rill::spawn", std::forward<F>(fn)));
}

// Lets other ready fibers and queued tasks of this worker run, and the network make progress,
// before the calling task continues.
void yield();

// A fiber-aware countdown: wait() inside a task suspends the task's fiber (its worker goes on with
// other tasks) instead of blocking the thread.
//
// The latch is open once a count_down() brings the count to zero (or when constructed with 0).
// add() re-arms an open latch; it must not race with the count_down() that opens it.
class latch {
 public:
  explicit latch(std::ptrdiff_t count = 0) : count_(count), waiters_(count == 0 ? open() : nullptr) {}
  latch(const latch&) = delete;
  latch& operator=(const latch&) = delete;

  void add(std::ptrdiff_t n = 1);
  void count_down(std::ptrdiff_t n = 1);
  bool try_wait() const { return waiters_.load(std::memory_order_acquire) == open(); }
  void wait();

 private:
  // The opening count_down swaps the waiter list for this marker; that swap is its last access to
  // the latch, so a waiter that sees the marker may destroy the latch at once.
  static detail::waiter* open() { return reinterpret_cast<detail::waiter*>(std::uintptr_t{1}); }
  std::atomic<std::ptrdiff_t> count_;
  std::atomic<detail::waiter*> waiters_;
};

}  // namespace rill
