// Local tasks: spawn work on the calling rank's workers, yield, and wait for a count of them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <type_traits>
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

// The spawner's promise that the task never waits for anything the spawner does after spawning it
// (directly or through tasks it starts later), and the same of every task the task spawns with
// may_inline, transitively: an inline task runs on top of all the frames below it on the fiber,
// its spawner's spawner's included. With it, spawn and async may run the task at once, on the
// spawner's fiber, instead of queueing it: they do when the worker already has
// --rill:inline-queue tasks queued (default 16), so thieves still find work, and a whole task's
// stack (plus the callable) is free. (OpenMP tasks carry this promise by default, since any of
// them may run undeferred; libgomp does so once 64 per thread of its team are queued.) Such a call
// may also let the worker poll the network before it returns: hold no lock across it. Not inline
// from a message handler or a task registered on phasers. What the task throws goes to its finish
// scope, as from a queued task.
struct may_inline_t {
  explicit may_inline_t() = default;
};
inline const may_inline_t may_inline{};

namespace detail {
// True when the calling task may run a may_inline task, whose callable takes `callable_bytes` on
// the stack, at once (see may_inline_t).
bool inline_task_begin(std::size_t callable_bytes);
// After the inline task returned or threw.
void inline_task_end();
// The inline task threw: its error goes to the calling task's finish scope (fatal without one).
void inline_task_failed(std::exception_ptr error);
}  // namespace detail

template <class F>
void spawn(may_inline_t, F&& fn) {
  using Fn = std::decay_t<F>;
  if (!detail::inline_task_begin(sizeof(Fn))) {
    spawn(std::forward<F>(fn));
    return;
  }
  {
    Fn task(std::forward<F>(fn));  // the task owns its callable and destroys it, as a queued one does
    try {
      task();
    } catch (...) {
      detail::inline_task_failed(std::current_exception());
    }
  }
  detail::inline_task_end();
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
