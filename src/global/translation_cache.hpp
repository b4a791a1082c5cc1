// A rank's guesses of where relocated AGAS blocks live now (HPX-5 §III, Fig. 5-6): block key ->
// owner rank. A guess may be stale (the block moved on); the owner it names then forwards, so the
// cache only decides how many hops an operation takes, never whether it is right. Bounded
// caches forget an entry when full: the least recently used one (lru) or one chosen at random.
// Not thread-safe: src/global/gas_table guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "rill/config.hpp"

namespace rill::detail {

struct translation_stats {
  std::uint64_t hits = 0, misses = 0, evictions = 0;
};

class translation_cache {
 public:
  translation_cache(gas_cache_policy policy, std::size_t capacity, std::uint64_t seed);

  // The owner guessed for `key`; counts a hit or a miss (lru: the entry becomes the most recent).
  std::optional<int> find(std::uint64_t key);
  // Remembers (or corrects) the owner of `key`, forgetting another entry if the cache is full.
  void insert(std::uint64_t key, int owner);
  void erase(std::uint64_t key);
  std::size_t size() const { return owners_.size(); }
  const translation_stats& stats() const { return stats_; }
  gas_cache_policy policy() const { return policy_; }
  std::size_t capacity() const { return capacity_; }

 private:
  struct entry {
    int owner;
    std::list<std::uint64_t>::iterator recent;  // lru: its place in recency_
    std::size_t slot;                           // random: its index in keys_
  };
  void evict_one();

  gas_cache_policy policy_;
  std::size_t capacity_;
  std::unordered_map<std::uint64_t, entry> owners_;
  std::list<std::uint64_t> recency_;  // lru: most recent first
  std::vector<std::uint64_t> keys_;   // random: every key, for a uniform choice
  std::mt19937_64 random_;
  translation_stats stats_;
};

}  // namespace rill::detail
