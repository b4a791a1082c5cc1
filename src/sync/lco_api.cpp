// The non-template half of LCOs: each rank's table, and the counting semaphore.
#include <fmt/format.h>

#include <deque>
#include <vector>

#include "rill/lco.hpp"
#include "sync/lco_table.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

std::uint64_t lco_table::add(std::shared_ptr<lco_box_base> box) {
  const auto id = reinterpret_cast<std::uint64_t>(box.get());
  std::lock_guard g(lock_);
  boxes_.emplace(id, std::move(box));
  return id;
}

std::shared_ptr<lco_box_base> lco_table::find(std::uint64_t id, const char* what) {
  std::lock_guard g(lock_);
  auto it = boxes_.find(id);
  if (it == boxes_.end())
    throw misuse_error(fmt::format("{}: rank {} has no such LCO (destroyed, or never created there)", what, me_));
  return it->second;
}

void lco_table::forget(std::uint64_t id, const char* what) {
  std::lock_guard g(lock_);
  if (boxes_.erase(id) == 0)
    throw misuse_error(fmt::format("{}: rank {} has no such LCO (destroyed twice?)", what, me_));
}

std::uint64_t lco_register(std::shared_ptr<lco_box_base> box) {
  return sync_here("rill::lco::create").lcos().add(std::move(box));
}

std::shared_ptr<lco_box_base> lco_find(std::uint64_t id, const char* what) {
  return sync_here(what).lcos().find(id, what);
}

void lco_forget(std::uint64_t id, const char* what) { sync_here(what).lcos().forget(id, what); }

namespace {

struct semaphore_box final : lco_box_base {
  std::int64_t units = 0;
  std::deque<event> waiting;  // grants owed, first come first served
};

std::shared_ptr<semaphore_box> semaphore_of(std::uint64_t id, const char* what) {
  return std::static_pointer_cast<semaphore_box>(lco_find(id, what));
}

// On the home: grant `grant` now, or queue it.
void request_here(std::uint64_t id, event grant) {
  auto s = semaphore_of(id, "rill::semaphore::acquire");
  {
    std::lock_guard g(s->lock);
    if (s->units == 0) {
      s->waiting.push_back(grant);
      return;
    }
    --s->units;
  }
  event_trigger(grant);
}

void release_here(std::uint64_t id, std::int64_t units) {
  auto s = semaphore_of(id, "rill::semaphore::release");
  std::vector<event> granted;
  {
    std::lock_guard g(s->lock);
    s->units += units;
    while (s->units > 0 && !s->waiting.empty()) {
      granted.push_back(s->waiting.front());
      s->waiting.pop_front();
      --s->units;
    }
  }
  for (event e : granted) event_trigger(e);
}

// Runs op() once `after` has triggered; if it is poisoned, poisons `victim` instead (if any).
template <class Op>
void once_triggered(event after, event victim, Op op) {
  if (after.has_triggered() && !after.poisoned()) {
    op();
    return;
  }
  when_triggered(after, [victim, op](const poison_ptr& cause) mutable {
    if (!cause)
      op();
    else if (!victim.is_none())
      event_poison(victim, cause);
  });
}

}  // namespace

}  // namespace rill::detail

namespace rill {

semaphore semaphore::create(std::int64_t units) {
  if (units < 0) throw misuse_error("rill::semaphore::create: a negative number of units");
  auto box = std::make_shared<detail::semaphore_box>();
  box->units = units;
  semaphore s;
  s.home_ = rank_me();
  s.id_ = detail::lco_register(box);
  return s;
}

event semaphore::acquire(event after) const {
  const user_event grant = user_event::create();
  const int home = home_;
  const std::uint64_t id = id_;
  detail::once_triggered(after, grant, [home, id, grant] {
    if (home == rank_me())
      detail::request_here(id, grant);
    else
      am::send(
          home, [](std::uint64_t i, event g) { detail::request_here(i, g); }, id, static_cast<event>(grant));
  });
  return grant;
}

void semaphore::release(std::int64_t units, event after) const {
  if (units <= 0) throw misuse_error("rill::semaphore::release: units must be positive");
  const int home = home_;
  const std::uint64_t id = id_;
  detail::once_triggered(after, event::none(), [home, id, units] {
    if (home == rank_me())
      detail::release_here(id, units);
    else
      am::send(
          home, [](std::uint64_t i, std::int64_t n) { detail::release_here(i, n); }, id, units);
  });
}

void semaphore::destroy() const {
  if (home_ == rank_me())
    detail::lco_forget(id_, "rill::semaphore::destroy");
  else
    am::send(
        home_, [](std::uint64_t i) { detail::lco_forget(i, "rill::semaphore::destroy"); }, id_);
}

}  // namespace rill
