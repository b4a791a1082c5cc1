#include "sync/finish_table.hpp"

#include "common/log.hpp"

namespace rill::detail {

finish_table::~finish_table() {
  // Proxies of scopes whose tasks were still running when the rank stopped (home proxies belong
  // to the finish() calls on their fibers' stacks).
  for (auto& [key, p] : proxies_)
    if (p->parent >= 0) delete p;
}

finish_proxy* finish_table::arrive(finish_key key, int from, std::uint64_t from_proxy, bool& ack_now) {
  std::lock_guard g(lock_);
  auto it = proxies_.find(key);
  if (it != proxies_.end()) {
    it->second->count.fetch_add(1, std::memory_order_relaxed);
    ack_now = true;
    return it->second;
  }
  // The home proxy stays in the table until its count is zero, which cannot happen while a task
  // of its scope travels: a task arriving home always finds it.
  if (key.home == me_) fatal("rank {}: a task arrived for a finish scope that has already ended", me_);
  auto* p = new finish_proxy;
  p->count.store(1, std::memory_order_relaxed);
  p->key = key;
  p->parent = from;
  p->parent_ptr = from_proxy;
  proxies_.emplace(key, p);
  ack_now = false;
  return p;
}

void finish_table::open_home(finish_proxy& home) {
  home.key = finish_key{me_, reinterpret_cast<std::uint64_t>(&home)};
  home.count.store(1, std::memory_order_relaxed);
  std::lock_guard g(lock_);
  proxies_.emplace(home.key, &home);
}

void finish_table::forget_home(finish_proxy& home) {
  std::lock_guard g(lock_);
  proxies_.erase(home.key);
}

bool finish_table::release_last(finish_proxy* p, std::int64_t units) {
  std::lock_guard g(lock_);
  if (p->count.fetch_sub(units, std::memory_order_acq_rel) != units) return false;
  proxies_.erase(p->key);
  return true;
}

}  // namespace rill::detail
