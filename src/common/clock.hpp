// The runtime's one clock: nanoseconds of std::chrono::steady_clock, for thresholds and back-off.
#pragma once

#include <chrono>
#include <cstdint>

namespace rill::detail {

inline std::uint64_t steady_now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// For checks that idle workers make on every round: true on every Nth call of the thread, so that
// they read the clock only then (a clock read costs as much as a poll, and every nanosecond of an
// idle round is latency added to the next arrival). `Site`, the checking class, keeps the counts
// of two checks apart.
template <unsigned N, class Site>
inline bool every_nth_idle_round() {
  thread_local unsigned calls = 0;
  return ++calls % N == 0;
}

}  // namespace rill::detail
