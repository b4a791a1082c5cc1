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
  {
    std::unique_lock lock(mutex_);
    if (pending_.load(std::memory_order_acquire) != 0) {
      if (!has_waiter_) {
        waiter_ = user_event::create();
        has_waiter_ = true;
      }
      const event e = waiter_;
      lock.unlock();
      e.wait();
      lock.lock();
    }
    if (error_.empty()) return;
  }
  std::string why;
  {
    std::lock_guard lock(mutex_);
    why.swap(error_);
  }
  throw poisoned_error(why, rank_me(), "a feed-forward operation of rill::completion_counter");
}

void completion_counter::completed(const std::string* error) {
  if (error) {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = *error;
  }
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard lock(mutex_);
  // A wait() that saw the count above zero created the event under this lock: wake it.
  if (has_waiter_ && pending_.load(std::memory_order_acquire) == 0) {
    waiter_.trigger();
    has_waiter_ = false;
  }
}

void completion_counter::failed_here(const std::string& error) {
  issued();
  completed(&error);
}

namespace detail {

void ack_completion(int owner, std::uintptr_t counter, const std::string* error) {
  if (!error) {
    am::send(
        owner, [](std::uintptr_t c) { reinterpret_cast<completion_counter*>(c)->completed(nullptr); }, counter);
    return;
  }
  am::send(
      owner,
      [](std::uintptr_t c, const std::string& why) { reinterpret_cast<completion_counter*>(c)->completed(&why); },
      counter, *error);
}

}  // namespace detail

}  // namespace rill
