// The non-template halves of rill/task.hpp: task records, spawning on the calling worker (or its
// rank's channels: scheduler/channel.hpp), yield, and rill::latch.
#include <fmt/format.h>

#include <thread>

#include "rill/error.hpp"
#include "rill/task.hpp"
#include "scheduler/channel.hpp"
#include "scheduler/current_module.hpp"
#include "scheduler/worker.hpp"
#include "scheduler/worker_pool.hpp"
#include "trace/hooks.hpp"

namespace rill::detail {

void throw_outside_worker(const char* what) {
  throw rill::misuse_error(fmt::format("{} called outside a Rill task or handler", what));
}

task_record* task_allocate() {
  if (worker* w = current_worker()) return w->allocate_task();
  return new task_record;
}

void task_submit(task_record* t) {
  worker* w = current_worker();
  if (w->traced()) [[unlikely]]
    if (const std::uint64_t flow = trace::tls_releasing_flow) w->pool().trace()->note_released(t, flow);
  w->push(t);
}

void channel_submit(task_record* t) { current_worker()->pool().submit_to_channel(t); }
void io_submit(task_record* t) { current_worker()->pool().submit_to_io(t); }

bool inline_task_begin(std::size_t callable_bytes) {
  worker* w = current_worker();
  if (!w || !w->may_run_inline(callable_bytes)) return false;
  ++w->current_fiber()->inline_depth;
  return true;
}

void inline_task_end() {
  worker* w = current_worker();
  --w->current_fiber()->inline_depth;
  w->inline_task_ran();
}

void require_worker(const char* what) {
  if (!current_worker()) throw_outside_worker(what);
}

}  // namespace rill::detail

namespace rill {

void yield() {
  if (detail::worker* w = detail::current_worker())
    w->yield();
  else
    std::this_thread::yield();
}

void latch::add(std::ptrdiff_t n) {
  if (count_.fetch_add(n, std::memory_order_acq_rel) == 0) {
    detail::waiter* expected = open();
    waiters_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  }
}

void latch::count_down(std::ptrdiff_t n) {
  const std::ptrdiff_t left = count_.fetch_sub(n, std::memory_order_acq_rel) - n;
  if (left > 0) return;
  if (left < 0) throw misuse_error("rill::latch::count_down below zero");
  detail::waiter* w = waiters_.exchange(open(), std::memory_order_acq_rel);
  while (w) {
    detail::waiter* next = w->next;  // read before wake: the waiter may vanish once woken
    detail::wake(w);
    w = next;
  }
}

void latch::wait() {
  if (try_wait()) return;
  detail::waiter self;
  detail::prepare_wait(self);
  detail::waiter* head = waiters_.load(std::memory_order_acquire);
  do {
    if (head == open()) return;
    self.next = head;
  } while (!waiters_.compare_exchange_weak(head, &self, std::memory_order_acq_rel, std::memory_order_acquire));
  detail::park(self);
}

}  // namespace rill
