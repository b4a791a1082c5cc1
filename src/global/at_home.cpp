// The non-template half of rill/detail/at_home.hpp: checked addresses and delegate locks.
#include "rill/detail/at_home.hpp"

#include <fmt/format.h>

#include "global/global_module.hpp"

namespace rill::detail {

const char* home_op_name(home_op op) {
  switch (op) {
    case home_op::rput: return "rill::rput";
    case home_op::rget: return "rill::rget";
    case home_op::atomic: return "rill::atomics";
    case home_op::delegate: return "rill::delegate";
    case home_op::gas: return "rill::gas";
  }
  return "rill: an operation at a global pointer's home";
}

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

std::string bad_range_text(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  try {
    addressable_or_null(rank, addr, bytes, align, op);
  } catch (const std::exception& e) {
    return e.what();
  }
  return fmt::format("{}: the range at 0x{:x} on rank {} is outside its segment", home_op_name(op), addr, rank);
}

void* resolve_target(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op, bool& bad_range) {
  const global_module& r = global_here(home_op_name(op));
  if (addr == 0 || rank < 0 || rank >= r.size()) check_target(rank, addr, op);  // throws, naming the cause
  const segment_view* s = r.addressable_segment(rank);
  // The hot path of GUPS-like loops: checking the tag here costs about a tenth of their rate, so
  // it is --rill:tag-checks=every's (the default of debug builds).
  bad_range = s && (r.checks_every_tag() ? s->check(addr, bytes, align) : s->check_bounds(addr, bytes, align)) !=
                       range_fault::none;
  return s && !bad_range ? s->translate(addr) : nullptr;
}

void* home_address(std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  const global_module& r = global_here(home_op_name(op));
  return checked_address(*r.addressable_segment(r.id()), r.id(), addr, bytes, align, home_op_name(op));
}

word_guard::word_guard(int rank, std::uintptr_t addr) {
  const segment_view* s = global_here("rill::delegate").addressable_segment(rank);
  spinlock& lock = s->stripe(addr);
  lock.lock();
  lock_ = &lock;
}

word_guard::~word_guard() { static_cast<spinlock*>(lock_)->unlock(); }

}  // namespace rill::detail
