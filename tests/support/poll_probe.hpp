// Shows whether a rank's network is polled during a long stretch of work that never waits: the
// first step sends the rank a message to itself, and every later step that finds it handled
// counts itself. A poll only after the stretch leaves steps_after() at 0.
#pragma once

#include <atomic>

#include "rill/rill.hpp"

namespace rill_test::poll_probe {

inline std::atomic<int> state{0};  // 0: the message is not sent yet; 1: sent; 2: handled
inline std::atomic<long> after{0};

inline void reset() {
  state = 0;
  after = 0;
}

inline void step() {
  if (state.load() == 0) {
    state = 1;
    rill::am::send(rill::rank_me(), [] { state = 2; });
    rill::am::flush();
  } else if (state.load() == 2) {
    after.fetch_add(1);
  }
}

inline bool handled() { return state.load() == 2; }
inline long steps_after() { return after.load(); }

}  // namespace rill_test::poll_probe
