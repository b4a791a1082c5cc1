#include "sync/finish_table.hpp"

#include "common/log.hpp"

namespace rill::detail {

finish_table::~finish_table() {
  // Proxies of scopes whose tasks were still running when the rank stopped.
  for (auto& [key, p] : proxies_) delete p;
}

finish_proxy* finish_table::arrive(finish_key key, int from, std::uint64_t from_proxy, bool& ack_now) {
  ack_now = true;
  if (key.home == me_) {
    finish_proxy* home = open_home_of(key, from, "a task");
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
  const auto addr = reinterpret_cast<std::uint64_t>(&home);
  if (addr >> finish_key::stamp_shift) fatal("rill::finish: a scope at {:#x}, above 2^48, cannot be named", addr);
  constexpr std::uint64_t stamps = std::uint64_t{1} << (64 - finish_key::stamp_shift);
  // 1..2^16-1: 0 means closed. Counted per thread, not per rank: a finish per task must not
  // contend for one counter, and the scope that reuses an address is almost always opened by the
  // same worker (the same frame of a fiber it runs). A late task meets a wrong stamp unless
  // exactly 65,535 scopes of that thread opened since its own, or another thread's count agrees.
  thread_local std::uint64_t opened = 0;
  const std::uint64_t stamp = opened++ % (stamps - 1) + 1;
  home.key = finish_key{me_, addr | (stamp << finish_key::stamp_shift)};
  home.count.store(1, std::memory_order_relaxed);
  home.open_stamp.store(stamp, std::memory_order_release);
}

finish_proxy* finish_table::open_home_of(finish_key key, int from, const char* what) const {
  finish_proxy* home = key.home_proxy();
  if (home->open_stamp.load(std::memory_order_acquire) != key.stamp()) {
    fatal(
        "rank {}: {} of a finish scope that has ended arrived from rank {} (scope {:#x}, home rank {}): a task or "
        "error was sent for a scope after finish() returned there -- a runtime or message corruption bug, please "
        "report it",
        me_, what, from, key.addr, me_);
  }
  return home;
}

bool finish_table::release_last(finish_proxy* p, std::int64_t units) {
  std::lock_guard g(lock_);
  if (p->count.fetch_sub(units, std::memory_order_acq_rel) != units) return false;
  proxies_.erase(p->key);
  return true;
}

}  // namespace rill::detail
