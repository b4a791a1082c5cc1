// Start-up, the top-level task, and shutdown.
//
//   int main(int argc, char** argv) {
//     rill::runtime rt(argc, argv);         // consumes --rill:* flags, leaves the program's own
//     return rt.run([] { ...; return 0; });  // top-level task on rank 0; other ranks serve
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/config.hpp"

namespace rill {

class runtime_impl;

class runtime {
 public:
  // Parses --rill:* flags (and RILL_* variables) out of argv, compacting argv and updating argc.
  // A bad flag prints a clear error and exits with rill::exit_usage.
  runtime(int& argc, char** argv);
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Runs fn as the top-level task on rank 0 while every other rank serves messages. Returns (on
  // every rank) fn's return value once the whole program is quiescent: every message delivered,
  // every task finished.
  template <class F>
  int run(F&& fn) {
    return run_top(wrap(std::forward<F>(fn)), false);
  }
  // Runs fn on every rank. Returns the lowest-ranked non-zero result, or 0.
  template <class F>
  int run_spmd(F&& fn) {
    return run_top(wrap(std::forward<F>(fn)), true);
  }

  // Ranks in the whole program, and how many of them live in this process.
  int ranks() const;
  int local_ranks() const;
  const rill::config& options() const;

 private:
  template <class F>
  static std::function<int()> wrap(F&& fn) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      return [f = std::forward<F>(fn)]() mutable {
        f();
        return 0;
      };
    } else {
      return [f = std::forward<F>(fn)]() mutable { return static_cast<int>(f()); };
    }
  }
  int run_top(std::function<int()> fn, bool spmd);

  std::unique_ptr<runtime_impl> impl_;
};

// The calling task's rank and the number of ranks (valid inside tasks and handlers).
int rank_me();
int rank_n();

// Counters of the calling rank, for summaries and benchmarks.
struct rank_stats {
  std::uint64_t messages_sent = 0;     // active messages (not buffers) sent
  std::uint64_t messages_handled = 0;  // active messages whose handler has run here
  std::uint64_t buffers_sent = 0;      // transport sends (aggregated buffers or large payloads)
  std::uint64_t bytes_sent = 0;
  std::uint64_t tasks_run = 0;
  std::uint64_t steals = 0;
  std::uint64_t fibers_created = 0;
};
rank_stats stats();

// One counter of the calling rank (the layer it belongs to, its name, its value).
struct counter {
  std::string layer;
  std::string name;
  std::uint64_t value = 0;
};
// Every counter of every layer of the calling rank, bottom up: what rank_stats, event_stats,
// reservation_stats, steal_stats and gas::stats report, and what --rill:stats prints.
std::vector<counter> counters();

}  // namespace rill
