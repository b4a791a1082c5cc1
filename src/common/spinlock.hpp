// A test-and-test-and-set spin lock for critical sections of a few instructions (aggregation
// buffers, delegate operations), where a mutex's system call on contention would cost more than
// the section.
#pragma once

#include <atomic>

namespace rill::detail {

class spinlock {
 public:
  void lock() {
    while (flag_.test_and_set(std::memory_order_acquire)) {
      while (flag_.test(std::memory_order_relaxed)) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
};

}  // namespace rill::detail
