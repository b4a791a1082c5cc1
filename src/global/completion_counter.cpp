// rill::completion_counter (rill/completion_counter.hpp).
#include "rill/completion_counter.hpp"

#include "common/log.hpp"
#include "rill/am.hpp"
#include "rill/error.hpp"
#include "rill/proc.hpp"

namespace rill {

completion_counter::~completion_counter() {
  if (outstanding() == 0) return;
  try {
    wait();
  } catch (const std::exception& e) {
    detail::log().error("rill::completion_counter destroyed with a failed operation: {}", e.what());
  }
}

void completion_counter::wait() {
  if (outstanding() != 0) {
    waiter_ = user_event::create();
    std::int64_t now = pending_.load(std::memory_order_acquire);
    while (now != 0 && !pending_.compare_exchange_weak(now, now | waiting, std::memory_order_acq_rel)) {
    }
    if (now == 0)
      waiter_.trigger();  // all came back meanwhile; the event must not stay untriggered
    else
      waiter_.wait();
    pending_.fetch_and(~waiting, std::memory_order_acq_rel);
  }
  std::string why;
  {
    std::lock_guard lock(mutex_);
    if (error_.empty()) return;
    why.swap(error_);
  }
  throw poisoned_error(why, rank_me(), "a feed-forward operation of rill::completion_counter");
}

void completion_counter::completed(const std::string* error) {
  if (error) {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = *error;
  }
  // Only a completion that finds wait() asleep reads waiter_ (which wait() set before it said it
  // was asleep), and wait() cannot return before that completion's trigger; the trigger works on
  // a copy, since the counter may be gone as soon as the event has triggered.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == (waiting | 1)) {
    const user_event wake = waiter_;
    wake.trigger();
  }
}

void completion_counter::failed_here(const std::string& error) {
  issued();
  completed(&error);
}

namespace detail {

void ack_completion(int owner, std::uintptr_t counter, const std::string* error) {
  if (owner == rank_me()) {
    reinterpret_cast<completion_counter*>(counter)->completed(error);
    return;
  }
  if (!error) {
    am::send_inline(
        owner, [](std::uintptr_t c) { reinterpret_cast<completion_counter*>(c)->completed(nullptr); }, counter);
    return;
  }
  am::send_inline(
      owner,
      [](std::uintptr_t c, const std::string& why) { reinterpret_cast<completion_counter*>(c)->completed(&why); },
      counter, *error);
}

}  // namespace detail

}  // namespace rill
