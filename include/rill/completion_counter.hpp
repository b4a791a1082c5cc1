// Completion of feed-forward operations (Grappa's feed-forward delegates): a loop issues writes,
// atomics or delegates without waiting for each, then waits once for all of them.
//
//   rill::completion_counter done;
//   for (auto i : indices) rill::atomics::bit_xor(table + i, key(i), done);   // no future each
//   done.wait();                                 // every update has been applied at its home
//
// The counter belongs to the rank that created it and is used there: operations count in when
// issued and out when their home has applied them (one small message back, aggregated like any
// other). wait() suspends the calling task until the count is zero; the first error an operation
// met at its home (an address outside the segment, a delegate that threw) is rethrown by wait() as
// rill::poisoned_error, after every operation has finished. The destructor waits too, so the
// acknowledgements never reach a dead counter.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "rill/event.hpp"

namespace rill {

class completion_counter {
 public:
  completion_counter() = default;
  completion_counter(const completion_counter&) = delete;
  completion_counter& operator=(const completion_counter&) = delete;
  ~completion_counter();

  // Suspends the calling task until every operation issued with this counter has completed;
  // throws rill::poisoned_error naming the first failure (and forgets it).
  void wait();
  // Operations issued and not yet acknowledged.
  std::int64_t outstanding() const { return pending_.load(std::memory_order_acquire) & ~waiting; }

  // For the operations themselves: one more in flight; one done (error: null if it succeeded).
  void issued() { pending_.fetch_add(1, std::memory_order_relaxed); }
  void completed(const std::string* error);
  // An operation that failed on the calling rank, before anything was sent.
  void failed_here(const std::string& error);

 private:
  // Set in pending_ while wait() sleeps on waiter_: only then does the last completion touch the
  // counter after counting out (to wake it), so a wait() that finds the count at zero may destroy
  // the counter at once, even while the completion that brought it there is still returning.
  static constexpr std::int64_t waiting = std::int64_t{1} << 62;
  std::atomic<std::int64_t> pending_{0};
  std::mutex mutex_;   // guards error_
  user_event waiter_;  // created by wait() while operations are in flight
  std::string error_;
};

namespace detail {
// Sends the acknowledgement of one operation to the rank that holds `counter`.
void ack_completion(int owner, std::uintptr_t counter, const std::string* error);
}  // namespace detail

}  // namespace rill
