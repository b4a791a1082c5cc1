// The Graph500 Kronecker (R-MAT) edge generator, shared by A3 and G2: 2^scale vertices and
// edge_factor * 2^scale edges, each edge choosing one quadrant of the adjacency matrix per bit
// with probabilities A = 0.57, B = C = 0.19, D = 0.05. Edge k depends only on (seed, k), so any
// rank can generate any slice of the list. Graph500 also permutes the vertex labels, which spreads
// the high-degree vertices; R-MAT as HPX-5's Fig. 1 uses it does not.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace bench {

struct kronecker {
  int scale;
  int edge_factor;
  std::uint64_t seed;
  bool permute;

  std::uint64_t vertices() const { return std::uint64_t{1} << scale; }
  std::uint64_t edges() const { return static_cast<std::uint64_t>(edge_factor) * vertices(); }

  // Edge k as (from, to), before the permutation: a splitmix64 stream seeded by (seed, k).
  std::pair<std::uint64_t, std::uint64_t> raw_edge(std::uint64_t k) const {
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull ^ (k + 1) * 0xd1b54a32d192ed03ull;
    std::uint64_t from = 0, to = 0;
    for (int bit = 0; bit < scale; ++bit) {
      std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      const double r = static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
      const bool down = r >= 0.76;                              // quadrants C and D
      const bool right = (r >= 0.57 && r < 0.76) || r >= 0.95;  // quadrants B and D
      from = (from << 1) | (down ? 1u : 0u);
      to = (to << 1) | (right ? 1u : 0u);
    }
    return {from, to};
  }

  // The label permutation (identity when permute is off); the same on every rank.
  std::vector<std::uint64_t> labels() const {
    std::vector<std::uint64_t> p(vertices());
    std::iota(p.begin(), p.end(), std::uint64_t{0});
    if (permute) std::shuffle(p.begin(), p.end(), std::mt19937_64(seed ^ 0x5bd1e995ull));
    return p;
  }

  // fn(from, to) for every edge k in [first, last), labels applied.
  template <class F>
  void for_edges(std::uint64_t first, std::uint64_t last, const std::vector<std::uint64_t>& label, F&& fn) const {
    for (std::uint64_t k = first; k < last; ++k) {
      const auto [a, b] = raw_edge(k);
      fn(label[a], label[b]);
    }
  }
};

}  // namespace bench
