// What a task needs to belong to a finish scope (rill/finish.hpp): the scope of the running task,
// and counting a task in and out of it. Every task Rill's structured constructs start (async,
// spawn, async_at, forasync, ...) is counted in the scope of the task that started it.
#pragma once

#include <cstdint>
#include <exception>
#include <utility>

#include "rill/detail/task_record.hpp"

namespace rill::detail {

struct finish_proxy;

// The finish scope of the task running on the calling fiber (nullptr: none).
finish_proxy* current_finish();
// Makes `p` the calling fiber's scope; returns the previous one.
finish_proxy* set_current_finish(finish_proxy* p);
// One more task of `p` (the caller, a task of p, keeps p's count above zero meanwhile).
void finish_count(finish_proxy* p);
// A task of `p` ended; `error` is what it threw (null when it returned).
void finish_task_ended(finish_proxy* p, std::exception_ptr error);
// Takes `units` off p's count at once (a worker giving back held credit, or an acknowledgement);
// at zero, p's part of the scope ends.
void finish_release(finish_proxy* p, std::int64_t units);

// Runs fn() as a task of scope `p` on the calling fiber, then counts it out of p. Without a scope
// it just runs fn (and what fn throws goes to the caller).
template <class F>
void run_in_finish(finish_proxy* p, F& fn) {
  if (!p) {
    fn();
    return;
  }
  finish_proxy* previous = set_current_finish(p);
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
  }
  set_current_finish(previous);
  finish_task_ended(p, std::move(error));
}

// The record run policy of a task of finish scope `record->scope`.
struct run_in_scope {
  template <class Fn>
  static void run(task_record* r, Fn& fn) {
    run_in_finish(static_cast<finish_proxy*>(r->scope), fn);
  }
};

// A task record for fn running as a task of scope `p` (already counted in it). The scope rides in
// the record, not in the callable: a wrapping lambda would push callables that just fit the
// record's inline storage onto the heap.
template <class F>
task_record* make_scoped_task(finish_proxy* p, F&& fn) {
  if (!p) return make_task(std::forward<F>(fn));
  task_record* t = make_task<run_in_scope>(std::forward<F>(fn));
  t->scope = p;
  return t;
}

// A task record for fn, counted in the calling task's finish scope.
template <class F>
task_record* make_counted_task(F&& fn) {
  finish_proxy* p = current_finish();
  if (p) finish_count(p);
  return make_scoped_task(p, std::forward<F>(fn));
}

// What a task shipped to another rank carries of its scope: the scope's name (home rank and the
// home proxy's address) and the sending rank's proxy, which the receiver acknowledges.
struct finish_ticket {
  int home = -1;  // -1: the task belongs to no scope
  std::uint64_t scope = 0;
  std::uint64_t sender_proxy = 0;
};
// Counts a task about to be sent to another rank in the calling task's scope (or in `p`).
finish_ticket finish_ship();
finish_ticket finish_ship_from(finish_proxy* p);
// On the receiving rank: this rank's proxy for the ticket's scope, counting the arrived task
// (nullptr when the ticket has no scope). Acknowledges the sender unless the task engaged the proxy.
finish_proxy* finish_adopt(const finish_ticket& t);

}  // namespace rill::detail
