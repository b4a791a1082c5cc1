// HPCC RandomAccess's update stream, shared by the GUPS benchmarks (G3, A1, A2): each rank walks
// its own pseudo-random sequence of 64-bit values; an update's word is the value's low bits.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>

namespace bench {

inline constexpr std::uint64_t gups_poly = 7;  // HPCC's generator polynomial

inline std::uint64_t gups_next(std::uint64_t r) {
  return (r << 1) ^ (static_cast<std::int64_t>(r) < 0 ? gups_poly : 0);
}

// A nonzero start of rank r's stream (splitmix64 of r + 1).
inline std::uint64_t gups_start(int r) {
  std::uint64_t z = static_cast<std::uint64_t>(r + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) | 1;
}

// Runs fn(word, value) for `count` updates of rank r's stream, continuing from `state` (start it at
// gups_start(r)), over a table of `words` words (a power of two).
template <class F>
void gups_updates(std::uint64_t& state, std::uint64_t count, std::uint64_t words, F&& fn) {
  const std::uint64_t mask = words - 1;
  for (std::uint64_t k = 0; k < count; ++k) {
    state = gups_next(state);
    fn(state & mask, state);
  }
}

// The command line the AGAS GUPS benchmarks (A1, A2) share: repetitions and updates per rank;
// --quick means 2^14 updates per rank and one repetition.
struct gups_options {
  int reps = 3;
  int log_updates = 18;
  bool quick = false;
  void add_to(CLI::App& app) {
    app.add_option("--reps", reps, "repetitions")->check(CLI::Range(1, 100));
    app.add_option("--log-updates", log_updates, "log2 of the updates per rank")->check(CLI::Range(8, 26));
    app.add_flag("--quick", quick, "2^14 updates per rank, 1 repetition");
  }
  // After parsing: applies --quick; the updates per rank.
  std::uint64_t finish_parsing() {
    if (quick) {
      log_updates = std::min(log_updates, 14);
      reps = 1;
    }
    return std::uint64_t{1} << log_updates;
  }
};

}  // namespace bench
