// Helpers of the global-memory tests: running a test with shared segments on and off, arrays
// on chosen ranks, and recognising a poisoned future by its words.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness.hpp"
#include "rill/global_ptr.hpp"

namespace rill_test {

// Runs fn(shared) on rank 0 with shared segments on (shared = true), then off; `extra` flags for
// both runs.
template <class F>
void both_ways(const setup& s, F fn, const std::vector<std::string>& extra = {}) {
  for (const char* shared : {"on", "off"}) {
    SCOPED_TRACE(std::string("--rill:shared-segments=") + shared);
    std::vector<std::string> flags = extra;
    flags.push_back(std::string("--rill:shared-segments=") + shared);
    EXPECT_EQ(run_checked(
                  s, [&] { fn(std::string(shared) == "on"); }, flags),
              0);
  }
}

// Runs fn(every) as both_ways does, with --rill:tag-checks=every (every = true) and =home
// (single-element operations through a mapped segment check bounds only).
template <class F>
void each_tag_check(const setup& s, F fn) {
  for (const char* checks : {"every", "home"}) {
    SCOPED_TRACE(std::string("--rill:tag-checks=") + checks);
    const bool every = std::string(checks) == "every";
    both_ways(s, [&](bool) { fn(every); }, {std::string("--rill:tag-checks=") + checks});
  }
}

inline long pattern(int rank, std::size_t i) { return static_cast<long>(rank) * 1'000'000'007L + static_cast<long>(i); }

// An array of n elements on `rank`, filled with pattern(rank, i) (or zeros).
template <class T = long>
rill::global_ptr<T> array_on(int rank, std::size_t n, bool filled) {
  return rill::rpc(
             rank,
             [](std::size_t count, bool fill) {
               rill::global_ptr<T> p = rill::new_array<T>(count);
               T* a = p.local(count);
               for (std::size_t i = 0; i < count; ++i) a[i] = fill ? static_cast<T>(pattern(rill::rank_me(), i)) : T{};
               return p;
             },
             n, filled)
      .get();
}

template <class T>
void free_on(rill::global_ptr<T> p) {
  rill::rpc(
      p.where(),
      [](rill::global_ptr<T> q) {
        rill::delete_array(q);
        return 0;
      },
      p)
      .wait();
}

// Whether fn() throws an exception of type E whose message contains `words`.
template <class E, class F>
bool throws_saying(F fn, const std::string& words) {
  try {
    fn();
  } catch (const E& e) {
    return std::string(e.what()).find(words) != std::string::npos;
  }
  return false;
}

// Whether waiting on f (a future or an event) throws a poisoned_error whose message contains `words`.
template <class W>
bool poisoned_saying(const W& f, const std::string& words) {
  try {
    f.wait();
  } catch (const rill::poisoned_error& e) {
    return std::string(e.what()).find(words) != std::string::npos;
  }
  return false;
}

// The operation a poisoned wait names (poisoned_error::operation()), "" when f is not poisoned.
template <class W>
std::string poisoned_operation(const W& f) {
  try {
    f.wait();
  } catch (const rill::poisoned_error& e) {
    return e.operation();
  }
  return "";
}

}  // namespace rill_test
