// The non-template half of rill::finish and of counting tasks in and out of finish scopes.
#include <fmt/format.h>

#include <typeinfo>

#include "rill/finish.hpp"
#include "scheduler/worker.hpp"
#include "sync/finish_table.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

namespace {

// A worker adds this many units to a scope's count when it has none held (worker::held_credit).
constexpr std::int64_t credit_batch = 16;

void acknowledge(int dest, finish_proxy* p) {
  am::send_inline(
      dest, [](std::uint64_t proxy) { finish_task_ended(reinterpret_cast<finish_proxy*>(proxy), nullptr); },
      reinterpret_cast<std::uint64_t>(p));
}

void record_error(finish_proxy& home, std::exception_ptr error) {
  std::lock_guard g(home.error_lock);
  if (!home.first_error) home.first_error = std::move(error);
}

// A task of a scope whose home is another rank threw: the home learns it in a message that the
// sending proxy counts until the home acknowledges it, so the scope cannot end before it arrives.
void report_remote_error(finish_proxy* p, const std::exception_ptr& error) {
  std::string type = "an exception that is not a std::exception", message;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    type = typeid(e).name();
    message = e.what();
  } catch (...) {
  }
  p->count.fetch_add(1, std::memory_order_relaxed);
  am::send(
      p->key.home,
      [](std::uint64_t scope, std::uint64_t from_proxy, int rank, const std::string& t, const std::string& m) {
        finish_proxy* home = sync_here("a finish scope's error")
                                 .finishes()
                                 .open_home_of(finish_key{rank_me(), scope}, am::sender(), "an error");
        record_error(*home, std::make_exception_ptr(task_error(t, m, rank)));
        acknowledge(am::sender(), reinterpret_cast<finish_proxy*>(from_proxy));
      },
      p->key.addr, reinterpret_cast<std::uint64_t>(p), rank_me(), type, message);
}

}  // namespace

finish_proxy* current_finish() {
  worker* w = current_worker();
  return w ? static_cast<finish_proxy*>(w->current_fiber()->task.scope) : nullptr;
}

finish_proxy* set_current_finish(finish_proxy* p) {
  fiber_rec* f = current_worker()->current_fiber();
  auto* previous = static_cast<finish_proxy*>(f->task.scope);
  f->task.scope = p;
  return previous;
}

namespace {

// One more task of p, counted by worker w.
void count_on(worker& w, finish_proxy* p) {
  held_credit& c = w.credit();
  if (c.scope == p) {  // (then c.units > 0)
    if (--c.units == 0) c.scope = nullptr;
    return;
  }
  p->count.fetch_add(credit_batch, std::memory_order_relaxed);
  if (c.units) w.return_credit();
  c = {p, credit_batch - 1};
}

}  // namespace

void finish_count(finish_proxy* p) {
  worker* w = current_worker();
  if (!w) {
    p->count.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  count_on(*w, p);
}

task_record* task_allocate_counted(const char* what) {
  worker* w = current_worker();
  if (!w) throw_outside_worker(what);
  auto* p = static_cast<finish_proxy*>(w->current_fiber()->task.scope);
  if (p) count_on(*w, p);
  task_record* t = w->allocate_task();
  t->scope = p;
  return t;
}

void finish_task_ended(finish_proxy* p, std::exception_ptr error) {
  if (error) {
    if (p->parent < 0)
      record_error(*p, std::move(error));
    else
      report_remote_error(p, error);
  }
  if (worker* w = current_worker())
    w->count_ended(p);
  else
    finish_release(p, 1);
}

void inline_task_failed(std::exception_ptr error) {
  finish_proxy* p = current_finish();
  if (!p) fatal_unhandled(error);
  // The inline task was never counted in the scope (its spawner kept the scope open): count it
  // now, so that it can end with its error as a queued task would.
  finish_count(p);
  finish_task_ended(p, std::move(error));
}

void finish_release(finish_proxy* p, std::int64_t units) {
  if (p->parent < 0) {  // the home: finish() may go on (and destroy *p) at once
    if (p->count.fetch_sub(units, std::memory_order_acq_rel) == units) p->done->count_down();
    return;
  }
  // Not the home: while the count stays above zero the units held here keep *p alive, so lower it
  // without a lock; the release that may reach zero takes the table's lock, where arrivals raise
  // the count, so exactly one release ends the proxy and nobody touches it afterwards (two
  // releases racing to zero, with an arrival between them, once deleted it under the other).
  std::int64_t c = p->count.load(std::memory_order_acquire);
  while (c > units)
    if (p->count.compare_exchange_weak(c, c - units, std::memory_order_acq_rel)) return;
  if (!sync_here("rill::finish").finishes().release_last(p, units)) return;
  const int parent = p->parent;
  auto* parent_proxy = reinterpret_cast<finish_proxy*>(p->parent_ptr);
  delete p;
  acknowledge(parent, parent_proxy);
}

finish_ticket finish_ship() { return finish_ship_from(current_finish()); }

finish_ticket finish_ship_from(finish_proxy* p) {
  if (!p) return {};
  finish_count(p);  // until the receiver acknowledges
  return finish_ticket{p->key.home, p->key.addr, reinterpret_cast<std::uint64_t>(p)};
}

finish_proxy* finish_adopt(const finish_ticket& t) {
  if (t.home < 0) return nullptr;
  const int from = am::sender();
  bool ack_now = false;
  finish_proxy* p =
      sync_here("rill::async_at").finishes().arrive(finish_key{t.home, t.scope}, from, t.sender_proxy, ack_now);
  if (ack_now) acknowledge(from, reinterpret_cast<finish_proxy*>(t.sender_proxy));
  return p;
}

void finish_run(void (*body)(void*), void* arg) {
  finish_table& table = sync_here("rill::finish").finishes();
  finish_proxy home;
  latch done(1);
  home.done = &done;
  table.open_home(home);
  finish_proxy* previous = set_current_finish(&home);
  std::exception_ptr error;
  try {
    body(arg);
  } catch (...) {
    error = std::current_exception();
  }
  set_current_finish(previous);
  finish_task_ended(&home, std::move(error));
  // The scope's tasks still queued here run now, on this fiber, as TBB's task_group::wait does:
  // no switch to another fiber and back for each. That is safe for these tasks only: one of them
  // could not wait for anything this task does after finish(), which returns after they all end.
  current_worker()->help_scope(&home);
  done.wait();
  finish_table::close_home(home);
  if (home.first_error) std::rethrow_exception(home.first_error);
}

}  // namespace rill::detail
