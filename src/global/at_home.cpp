// The non-template half of rill/detail/at_home.hpp: checked addresses and delegate locks.
#include "rill/detail/at_home.hpp"

#include <fmt/format.h>

#include "runtime/rank.hpp"

namespace rill::detail {

namespace {

std::uintptr_t checked(const segment& s, int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align,
                       home_op op) {
  if (!s.contains(addr, bytes))
    throw misuse_error(fmt::format("{}: [0x{:x}, +{} bytes) is outside rank {}'s registered segment", home_op_name(op),
                                   addr, bytes, rank));
  if (addr % align != 0)
    throw misuse_error(
        fmt::format("{}: 0x{:x} on rank {} is not aligned to {} bytes", home_op_name(op), addr, rank, align));
  return addr;
}

}  // namespace

const char* home_op_name(home_op op) {
  switch (op) {
    case home_op::rput: return "rill::rput";
    case home_op::rget: return "rill::rget";
    case home_op::atomic: return "rill::atomics";
    case home_op::delegate: return "rill::delegate";
  }
  return "rill: an operation at a global pointer's home";
}

void check_target(int rank, std::uintptr_t addr, home_op op) {
  if (addr == 0) throw misuse_error(fmt::format("{}: a null global pointer", home_op_name(op)));
  const int n = current_rank(home_op_name(op)).size();
  if (rank < 0 || rank >= n)
    throw misuse_error(
        fmt::format("{}: the global pointer names rank {}, and there are {} ranks", home_op_name(op), rank, n));
}

void* addressable_or_null(int rank, std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  segment* s = current_rank(home_op_name(op)).addressable_segment(rank);
  if (!s) return nullptr;
  return reinterpret_cast<void*>(checked(*s, rank, addr, bytes, align, op));
}

void* home_address(std::uintptr_t addr, std::size_t bytes, std::size_t align, home_op op) {
  rank_state& r = current_rank(home_op_name(op));
  return reinterpret_cast<void*>(checked(r.memory_segment(), r.id(), addr, bytes, align, op));
}

word_guard::word_guard(int rank, std::uintptr_t addr) {
  segment* s = current_rank("rill::delegate").addressable_segment(rank);
  spinlock& lock = s->stripe(addr);
  lock.lock();
  lock_ = &lock;
}

word_guard::~word_guard() { static_cast<spinlock*>(lock_)->unlock(); }

}  // namespace rill::detail
