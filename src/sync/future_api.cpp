// The non-template half of promises and futures.
#include <fmt/format.h>

#include "common/log.hpp"
#include "rill/future.hpp"
#include "sync/promise_pins.hpp"
#include "sync/sync_module.hpp"

namespace rill::detail {

std::uint64_t promise_pins::pin(std::shared_ptr<future_core> state) {
  const auto key = reinterpret_cast<std::uint64_t>(state.get());
  std::lock_guard g(lock_);
  pinned& p = pins_[key];
  p.state = std::move(state);
  ++p.copies;
  return key;
}

std::shared_ptr<future_core> promise_pins::unpin(std::uint64_t key) {
  std::lock_guard g(lock_);
  auto it = pins_.find(key);
  if (it == pins_.end()) {
    throw misuse_error(fmt::format(
        "rill::promise: a copy of a promise of rank {} was put (or poisoned) again from rank {}; a promise takes "
        "one value",
        rank_me(), am::sender()));
  }
  std::shared_ptr<future_core> state = it->second.state;
  if (--it->second.copies == 0) pins_.erase(it);
  return state;
}

std::uint64_t promise_pin(std::shared_ptr<future_core> state) {
  return sync_here("rill::promise (passed to another rank)").promises().pin(std::move(state));
}

std::shared_ptr<future_core> promise_unpin(std::uint64_t key) {
  return sync_here("rill::promise::put").promises().unpin(key);
}

void promise_claim(future_core& s, const char* what) {
  if (s.satisfied.exchange(true, std::memory_order_acq_rel))
    throw misuse_error(fmt::format("{}: the promise already has a value (a promise takes one)", what));
}

void promise_poison(future_core& s, const std::string& reason, const std::string& what) {
  promise_claim(s, what.c_str());
  event_poison(s.ready, std::make_shared<const poison_info>(poison_info{reason, rank_me(), what}));
}

std::exception_ptr poisoned_exception(const poison_ptr& cause) {
  return std::make_exception_ptr(poisoned_error(cause->reason, cause->rank, cause->operation));
}

void report_dropped_task(const poison_ptr& cause) {
  log().error("rank {}: a task waiting outside any finish scope will not run: {} on rank {} failed: {}", rank_me(),
              cause->operation, cause->rank, cause->reason);
}

}  // namespace rill::detail
