// Start-up, the top-level task, and shutdown.
//
//   int main(int argc, char** argv) {
//     rill::runtime rt(argc, argv);         // consumes --rill:* flags, leaves the program's own
//     return rt.run([] { ...; return 0; });  // top-level task on rank 0; other ranks serve
//   }
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rill/config.hpp"
#include "rill/rank.hpp"  // rank_me, rank_n, stats: the rank core's answers

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

}  // namespace rill
