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

// A task record for fn running as a task of scope `p` (already counted in it). The scope rides in
// the record, not in the callable: a wrapping lambda would push callables that just fit the
// record's inline storage onto the heap. The worker that runs a record with a scope makes the
// scope the fiber's while it runs and counts the task out of it afterwards (with what it threw).
template <class F>
task_record* make_scoped_task(finish_proxy* p, F&& fn) {
  task_record* t = make_task(std::forward<F>(fn));
  t->scope = p;
  return t;
}

// A record from the calling worker's pool whose scope is the calling task's finish scope, counted
// one more task in it (one call for what spawning needs from the runtime). Throws
// rill::misuse_error naming `what` unless the caller is a Rill worker.
task_record* task_allocate_counted(const char* what);

// A task record for fn, counted in the calling task's finish scope.
template <class Run = run_plain, class F>
task_record* make_counted_task(const char* what, F&& fn) {
  task_record* t = task_allocate_counted(what);
  emplace_task<Run>(t, std::forward<F>(fn));
  return t;
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
