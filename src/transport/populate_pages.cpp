#include "transport/populate_pages.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace rill::detail {

void populate_pages(std::byte* p, std::size_t bytes) {
  // A write that changes nothing, one per page. Atomic, because the memory is shared and another
  // process may be using the same word. Not madvise(MADV_POPULATE_WRITE): it fills the guest's
  // page tables, but under a hypervisor that shadows them (this machine's) the first access of
  // each page still faults into the host; only an access from this process warms both.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  const std::uintptr_t first_word = (reinterpret_cast<std::uintptr_t>(p) + 7) / 8 * 8;
  for (std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p) / page * page; at < end; at += page) {
    const std::uintptr_t a = std::max(at, first_word);
    if (a + 8 <= end)
      std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(a)).fetch_add(0, std::memory_order_relaxed);
  }
}

}  // namespace rill::detail
