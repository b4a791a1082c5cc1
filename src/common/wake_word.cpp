#include "common/wake_word.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include "common/log.hpp"

namespace rill::detail {

namespace {

long futex(std::atomic<std::uint32_t>& word, bool across_processes, int op, std::uint32_t value,
           const timespec* timeout) {
  if (!across_processes) op |= FUTEX_PRIVATE_FLAG;  // (cheaper: the kernel keys it by address alone)
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

bool wake_word::sleep(std::uint32_t seen, std::chrono::microseconds limit) {
  const auto us = limit.count();
  const timespec timeout{static_cast<time_t>(us / 1'000'000), static_cast<long>(us % 1'000'000) * 1000};
  if (futex(epoch_, across_processes_, FUTEX_WAIT, seen, &timeout) == 0) return true;
  // EAGAIN (the word moved) and EINTR end the sleep as a wake-up does: the caller looks again.
  if (errno == EAGAIN || errno == EINTR) return true;
  if (errno == ETIMEDOUT) return false;
  // Anything else (a futex the kernel or a sandbox refuses) would turn every sleep into a spin.
  fatal("futex wait on a wake word failed: {}", std::strerror(errno));
}

void wake_word::wake() {
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  // A sleeper that announced itself after this load read `seen` after the bump (or its FUTEX_WAIT
  // finds the word moved), so it does not sleep through it.
  if (sleepers_.load(std::memory_order_seq_cst) > 0 &&
      futex(epoch_, across_processes_, FUTEX_WAKE, INT_MAX, nullptr) < 0)
    fatal("futex wake on a wake word failed: {}", std::strerror(errno));
}

}  // namespace rill::detail
