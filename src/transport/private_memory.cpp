#include "transport/private_memory.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"

namespace rill::detail {

private_memory::private_memory(std::size_t bytes) : size_(bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fatal("cannot reserve a {}-byte segment for global memory ({}); lower --rill:segment", bytes, std::strerror(errno));
  base_ = static_cast<std::byte*>(p);
}

private_memory::~private_memory() { ::munmap(base_, size_); }

}  // namespace rill::detail
