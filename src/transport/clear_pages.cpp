#include "transport/clear_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/log.hpp"

namespace rill::detail {

void clear_pages(std::byte* p, std::size_t bytes) {
  // The whole pages inside the range go back to the OS; the partial pages at its ends are zeroed.
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p), end = begin + bytes;
  const std::uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first >= last) {
    std::memset(p, 0, bytes);
    return;
  }
  std::memset(p, 0, first - begin);
  std::memset(reinterpret_cast<void*>(last), 0, end - last);
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_REMOVE) == 0) return;
  log().debug("madvise(MADV_REMOVE) on {} bytes of segment failed ({}): zeroing them instead", last - first,
              std::strerror(errno));
  std::memset(reinterpret_cast<void*>(first), 0, last - first);
}

}  // namespace rill::detail
