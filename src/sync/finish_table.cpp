#include "sync/finish_table.hpp"

namespace rill::detail {

finish_table::~finish_table() {
  // Proxies of scopes whose tasks were still running when the rank stopped.
  for (auto& [key, p] : proxies_) delete p;
}

finish_proxy* finish_table::arrive(finish_key key, int from, std::uint64_t from_proxy, bool& ack_now) {
  ack_now = true;
  if (key.home == me_) {
    auto* home = reinterpret_cast<finish_proxy*>(key.addr);
    home->count.fetch_add(1, std::memory_order_relaxed);
    return home;
  }
  std::lock_guard g(lock_);
  auto it = proxies_.find(key);
  if (it != proxies_.end()) {
    it->second->count.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }
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
}

bool finish_table::release_last(finish_proxy* p, std::int64_t units) {
  std::lock_guard g(lock_);
  if (p->count.fetch_sub(units, std::memory_order_acq_rel) != units) return false;
  proxies_.erase(p->key);
  return true;
}

}  // namespace rill::detail
