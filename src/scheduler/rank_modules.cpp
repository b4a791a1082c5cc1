#include "scheduler/rank_modules.hpp"

#include <algorithm>
#include <atomic>

#include "common/log.hpp"

namespace rill::detail {

std::size_t next_module_slot() {
  static std::atomic<std::size_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void module_table::place(std::size_t slot, rank_module* m) {
  if (slot >= max_modules) fatal("more than {} kinds of rank module: raise module_table::max_modules", max_modules);
  if (slots_[slot]) fatal("a rank module was added twice");
  slots_[slot] = m;
  order_.push_back(m);
}

void module_table::clear() {
  while (!owned_.empty()) {
    rank_module* m = owned_.back().get();
    std::replace(slots_.begin(), slots_.end(), m, static_cast<rank_module*>(nullptr));
    std::erase(order_, m);
    owned_.pop_back();
  }
}

}  // namespace rill::detail
