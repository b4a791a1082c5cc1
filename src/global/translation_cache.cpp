#include "global/translation_cache.hpp"

namespace rill::detail {

translation_cache::translation_cache(gas_cache_policy policy, std::size_t capacity, std::uint64_t seed)
    : policy_(policy),
      capacity_(policy == gas_cache_policy::unbounded ? 0 : std::max<std::size_t>(1, capacity)),
      random_(seed) {}

std::optional<int> translation_cache::find(std::uint64_t key) {
  auto it = owners_.find(key);
  if (it == owners_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  if (policy_ == gas_cache_policy::lru) recency_.splice(recency_.begin(), recency_, it->second.recent);
  return it->second.owner;
}

void translation_cache::insert(std::uint64_t key, int owner) {
  if (auto it = owners_.find(key); it != owners_.end()) {
    it->second.owner = owner;
    if (policy_ == gas_cache_policy::lru) recency_.splice(recency_.begin(), recency_, it->second.recent);
    return;
  }
  if (capacity_ != 0 && owners_.size() >= capacity_) evict_one();
  entry e{owner, {}, 0};
  if (policy_ == gas_cache_policy::lru) {
    recency_.push_front(key);
    e.recent = recency_.begin();
  } else if (policy_ == gas_cache_policy::random) {
    e.slot = keys_.size();
    keys_.push_back(key);
  }
  owners_.emplace(key, e);
}

void translation_cache::erase(std::uint64_t key) {
  auto it = owners_.find(key);
  if (it == owners_.end()) return;
  if (policy_ == gas_cache_policy::lru) recency_.erase(it->second.recent);
  if (policy_ == gas_cache_policy::random) {
    // Swap the last key into the freed slot.
    const std::uint64_t last = keys_.back();
    keys_[it->second.slot] = last;
    owners_.at(last).slot = it->second.slot;
    keys_.pop_back();
  }
  owners_.erase(it);
}

void translation_cache::evict_one() {
  ++stats_.evictions;
  if (policy_ == gas_cache_policy::lru) {
    erase(recency_.back());
  } else {
    std::uniform_int_distribution<std::size_t> pick(0, keys_.size() - 1);
    erase(keys_[pick(random_)]);
  }
}

}  // namespace rill::detail
