// What the launch tests share: a mapper that runs every launch on the rank it is told, and one
// that picks any rank at random.
#pragma once

#include <cstdint>
#include <random>

#include "rill/launch.hpp"

namespace rill_test {

class fixed_mapper : public rill::mapper {
 public:
  int rank = 0;
  int map_task(const rill::mapping_query&) override { return rank; }
};

// Any rank, at random (its own seed on the issuing rank).
class random_mapper : public rill::mapper {
 public:
  explicit random_mapper(std::uint64_t seed) : rng_(seed) {}
  int map_task(const rill::mapping_query&) override {
    return static_cast<int>(rng_() % static_cast<std::uint64_t>(rill::rank_n()));
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace rill_test
