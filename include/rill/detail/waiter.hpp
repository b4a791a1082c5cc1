// The one way anything in Rill waits: a waiter is registered somewhere, then parked; whoever
// satisfies the condition wakes it. Inside a task the fiber is suspended and its worker runs other
// work; on a plain thread the thread blocks.
#pragma once

namespace rill::detail {

struct waiter {
  void* fiber = nullptr;       // the suspended fiber, when waiting inside a task
  void* owner = nullptr;       // the worker that will resume it
  void* thread_sem = nullptr;  // the blocked thread's semaphore, when waiting outside a task
  waiter* next = nullptr;      // link for the structure that holds waiters
};

// Fill in who is waiting. Call before the waiter becomes visible to a waker.
void prepare_wait(waiter& w);
// Suspend until wake(w); returns at once if that already happened.
void park(waiter& w);
// Resume a parked (or about to park) waiter. Thread-safe; exactly once per wait. It does not touch
// *w after the waiter can run again, so the waiter may live on the waiting fiber's stack.
void wake(waiter* w);

// True when the calling thread runs inside a Rill task (so waiting suspends a fiber).
bool in_task();

}  // namespace rill::detail
