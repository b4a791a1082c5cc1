// The non-template half of rill/detail/at_home.hpp: checked addresses and delegate locks.
#include "rill/detail/at_home.hpp"

#include <fmt/format.h>

#include "global/global_module.hpp"

namespace rill::detail {

void check_target(int rank, std::uintptr_t addr, home_op op) {
  if (addr == 0) throw misuse_error(fmt::format("{}: a null global pointer", home_op_name(op)));
  const int n = global_here(home_op_name(op)).size();
  if (rank < 0 || rank >= n)
    throw misuse_error(
        fmt::format("{}: the global pointer names rank {}, and there are {} ranks", home_op_name(op), rank, n));
}

void* addressable_or_null(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  const segment_view* s = global_here(home_op_name(op)).addressable_segment(rank);
  return s ? checked_address(*s, rank, addr, bytes, align, home_op_name(op)) : nullptr;
}

std::string spot_refusal(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  check_target(rank, addr, op);
  try {
    // Every range spot_address refuses in a segment it maps, checked_address refuses too: here it
    // throws, or the segment is not addressable.
    addressable_or_null(rank, addr, bytes, align, op);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

void* home_address(std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  const global_module& r = global_here(home_op_name(op));
  return checked_address(*r.addressable_segment(r.id()), r.id(), addr, bytes, align, home_op_name(op));
}

word_guard::word_guard(int rank, std::uintptr_t addr) {
  spinlock& lock = delegate_stripe(address_map_here("rill::delegate").addressable[rank], addr);
  lock.lock();
  lock_ = &lock;
}

word_guard::~word_guard() { static_cast<spinlock*>(lock_)->unlock(); }

}  // namespace rill::detail
