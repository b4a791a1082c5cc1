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

}  // namespace rill::detail
