#include "global/segment.hpp"

#include <fmt/format.h>

#include <new>

#include "rill/error.hpp"

namespace rill::detail {

segment::segment(std::byte* memory, std::size_t bytes, std::size_t global_heap_bytes)
    : base_(memory),
      size_(bytes),
      heap_(boost::interprocess::create_only, memory + sizeof(segment_header),
            bytes - sizeof(segment_header) - global_heap_bytes) {
  ::new (static_cast<void*>(memory)) segment_header();
}

segment::~segment() {
  heap_ = boost::interprocess::managed_external_buffer();  // before its memory goes
}

void* segment::allocate(std::size_t bytes, std::size_t align) {
  std::lock_guard<std::mutex> hold(lock_);
  void* p = heap_.allocate_aligned(bytes == 0 ? 1 : bytes, static_cast<unsigned>(align), std::nothrow);
  if (p) live_.insert(p);
  return p;
}

bool segment::deallocate(void* p) {
  std::lock_guard<std::mutex> hold(lock_);
  if (live_.erase(p) == 0) return false;
  heap_.deallocate(p);
  return true;
}

void* checked_address(const segment_view& s, int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align,
                      const char* what) {
  if (!s.contains(addr, bytes))
    throw misuse_error(
        fmt::format("{}: [0x{:x}, +{} bytes) is outside rank {}'s registered segment", what, addr, bytes, rank));
  if ((addr & (align - 1)) != 0)  // align: a power of two
    throw misuse_error(fmt::format("{}: 0x{:x} on rank {} is not aligned to {} bytes", what, addr, rank, align));
  return s.translate(addr);
}

}  // namespace rill::detail
