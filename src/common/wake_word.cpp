#include "common/wake_word.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace rill::detail {

namespace {

// Not FUTEX_PRIVATE_FLAG: the word may be shared with other processes.
long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

bool wake_word::sleep(std::uint32_t seen, std::chrono::microseconds limit) {
  const auto us = limit.count();
  const timespec timeout{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  // EAGAIN (the word moved) and EINTR end the sleep as a wake-up does: the caller looks again.
  return futex(epoch_, FUTEX_WAIT, seen, &timeout) == 0 || errno != ETIMEDOUT;
}

void wake_word::wake() {
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  // A sleeper that announced itself after this load read `seen` after the bump (or its FUTEX_WAIT
  // finds the word moved), so it does not sleep through it.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) (void)futex(epoch_, FUTEX_WAKE, INT_MAX, nullptr);
}

}  // namespace rill::detail
