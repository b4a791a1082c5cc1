// For suites whose test body every rank runs (runtime::run_spmd): check() counts a failure and
// prints the first 20 with their rank, and run_everywhere() fails the run when any rank's did.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>

#include "harness.hpp"

namespace rill_test {

inline std::atomic<int> g_failures{0};

inline void check(bool ok, const std::string& what) {
  if (ok) return;
  if (g_failures.fetch_add(1) < 20) std::fprintf(stderr, "rank %d: check failed: %s\n", rill::rank_me(), what.c_str());
}

// Runs fn on every rank; non-zero when a check failed.
template <class F>
int run_everywhere(const setup& s, F fn) {
  g_failures = 0;
  args a(s);
  rill::runtime rt(a.argc, a.argv());
  const int code = rt.run_spmd([&]() -> int {
    fn();
    return g_failures.load() == 0 ? 0 : 1;
  });
  return code != 0 ? code : g_failures.load();
}

}  // namespace rill_test
