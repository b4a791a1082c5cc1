// A word that idle threads sleep on and that wakers bump: a Linux futex, so that it works between
// processes too when it lies in memory they share. The MPI transport places each rank's word in its
// node's shared window, where a node neighbour that writes to the rank's ring wakes its sleeping
// workers at once, instead of leaving them to find the message at their next timed poll.
//
// A sleeper reads seen(), announces itself, checks for work once more (after a seq_cst fence;
// under ThreadSanitizer the announcement's RMW orders it), and only then sleeps; a waker publishes
// its work, then notify() (a seq_cst fence and a load of the sleeper count). Either the sleeper's
// check sees the work or the waker sees the sleeper, and then the bump of the word either ends the
// sleep or makes it not begin (the kernel compares the word with `seen` as it queues the sleeper).
// scheduler/README.md has the whole argument.
//
// The futex calls are private to the process unless the word was made `across_processes`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "common/sanitizers.hpp"

namespace rill::detail {

// A cache line of its own: sleepers write it, and every notify reads it.
class alignas(64) wake_word {
 public:
  wake_word() = default;
  // A word in memory that other processes map and wake it through.
  explicit wake_word(bool across_processes) : across_processes_(across_processes) {}

  // Read before announce(): the value sleep() waits to see change.
  std::uint32_t seen() const { return epoch_.load(std::memory_order_seq_cst); }
  void announce() { sleepers_.fetch_add(1, std::memory_order_seq_cst); }
  void withdraw() { sleepers_.fetch_sub(1, std::memory_order_relaxed); }
  // Sleeps until the word moves from `seen` (at once if it has), `limit` passes, or a signal;
  // false when the limit passed.
  bool sleep(std::uint32_t seen, std::chrono::microseconds limit);

  // After publishing work that a sleeper's check would find: wakes the sleepers, if any.
  void notify() {
#if RILL_TSAN
    // ThreadSanitizer does not model fences; an RMW on the count orders the same way.
    if (sleepers_.fetch_add(0, std::memory_order_seq_cst) > 0) wake();
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) > 0) wake();
#endif
  }
  // notify() without the fence, for work its caller will do itself if nobody wakes: a sleeper that
  // announced itself just as the work was published may be missed and sleep out its time limit.
  void notify_unfenced() {
    if (sleepers_.load(std::memory_order_relaxed) > 0) wake();
  }
  // Ends every sleep announced before it, whether or not its caller published anything.
  void wake();
  // How often the word was woken (wraps at 2^32).
  std::uint32_t wakes() const { return epoch_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint32_t> epoch_{0};  // the futex word
  std::atomic<std::int32_t> sleepers_{0};
  bool across_processes_ = false;  // no FUTEX_PRIVATE_FLAG
};

static_assert(sizeof(std::atomic<std::uint32_t>) == 4 && std::atomic<std::uint32_t>::is_always_lock_free,
              "a futex is a plain 32-bit word");

}  // namespace rill::detail
