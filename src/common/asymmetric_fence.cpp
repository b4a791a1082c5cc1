#include "rill/detail/asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace rill::detail {
namespace {

long membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }

bool register_process() {
  if (!RILL_ASYMMETRIC_FENCES) return false;
  const long offered = membarrier(MEMBARRIER_CMD_QUERY);
  if (offered < 0 || (offered & MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

}  // namespace

bool enable_light_fences() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (register_process()) light_fences_enabled.store(true, std::memory_order_relaxed);
  });
  return light_fences_enabled.load(std::memory_order_relaxed);
}

void heavy_fence() {
  // Where this process could not register, no thread of the node stores plainly (one kernel
  // answers all of them alike): the sequentially consistent operations suffice.
  if (!light_fences_enabled.load(std::memory_order_relaxed)) return;
  if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) {
    // The kernel that registered this process refuses the barrier: the handshake cannot hold.
    std::fputs("rill: fatal: membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) failed after registration\n", stderr);
    std::abort();
  }
}

}  // namespace rill::detail
