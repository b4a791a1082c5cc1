#include "global/segment.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "common/log.hpp"

namespace rill::detail {

namespace {
void* reserve(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fatal("cannot reserve a {}-byte segment for global memory ({}); lower --rill:segment", bytes, std::strerror(errno));
  return p;
}
}  // namespace

segment::segment(std::size_t bytes)
    : base_(reserve(bytes)), size_(bytes), heap_(boost::interprocess::create_only, base_, bytes) {}

segment::~segment() {
  heap_ = boost::interprocess::managed_external_buffer();  // before its memory goes
  ::munmap(base_, size_);
}

void* segment::allocate(std::size_t bytes, std::size_t align) {
  return heap_.allocate_aligned(bytes == 0 ? 1 : bytes, static_cast<unsigned>(align), std::nothrow);
}

void segment::deallocate(void* p) { heap_.deallocate(p); }

}  // namespace rill::detail
