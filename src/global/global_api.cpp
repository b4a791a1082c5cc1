// The non-template half of rill/global_ptr.hpp: allocation in, and checked addressing of, the
// ranks' segments.
#include <fmt/format.h>

#include "global/global_module.hpp"
#include "rill/global_ptr.hpp"

namespace rill::detail {

std::uintptr_t segment_allocate(std::size_t bytes, std::size_t align, const char* what) {
  global_module& r = global_here(what);
  const segment::allocation a = r.memory_segment().allocate(bytes, align);
  if (!a.at)
    throw misuse_error(
        fmt::format("{}: {} bytes do not fit in what is free of rank {}'s {}-byte segment (--rill:segment)", what,
                    bytes, r.id(), r.memory_segment().size()));
  return with_tag(reinterpret_cast<std::uintptr_t>(a.at), a.tag);
}

void array_too_large(std::size_t count, std::size_t size) {
  throw misuse_error(fmt::format("rill::new_array: {} elements of {} bytes overflow the address space", count, size));
}

void segment_free(int rank, std::uintptr_t tagged, const char* what) {
  global_module& r = global_here(what);
  if (rank != r.id())
    throw misuse_error(
        fmt::format("{}: rank {}'s memory is freed on rank {}, not here (rank {})", what, rank, rank, r.id()));
  const std::uintptr_t addr = untagged(tagged);
  if (r.addressable_segment(rank)->check_bounds(addr, 1, 1) != range_fault::none)
    throw misuse_error(fmt::format("{}: 0x{:x} is not in rank {}'s segment", what, addr, rank));
  if (!r.memory_segment().deallocate(reinterpret_cast<void*>(addr), tag_of(tagged)))
    throw misuse_error(
        fmt::format("{}: 0x{:x} on rank {} is not a live allocation (freed already, or not the start "
                    "of one)",
                    what, addr, rank));
}

bool segment_addressable(int rank) { return global_here("rill::global_ptr").addressable_segment(rank) != nullptr; }

void* segment_address(int rank, std::uintptr_t tagged, std::size_t bytes, const char* what) {
  global_module& r = global_here(what);
  if (rank < 0 || rank >= r.size())
    throw misuse_error(
        fmt::format("{}: the global pointer names rank {}, and there are {} ranks", what, rank, r.size()));
  const segment_view* s = r.addressable_segment(rank);
  if (!s)
    throw misuse_error(
        fmt::format("{}: rank {}'s memory is not addressable from rank {} (use rill::async_copy)", what, rank, r.id()));
  return checked_address(*s, rank, tagged, bytes, 1, what);
}

int calling_rank(const char* what) { return global_here(what).id(); }

const address_map& find_address_map(const char* what) {
  const address_map& m = global_here(what).addresses();
  tls_address_map = &m;
  return m;
}

}  // namespace rill::detail
