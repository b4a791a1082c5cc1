// Runs the same multi-rank tests on the local transport (every ranks/chaos/workers combination
// below) and, when started by mpirun, on the mpi transport (the launcher's ranks).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rill/launcher.hpp"
#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace rill_test {

struct setup {
  int ranks;
  int workers;
  std::uint64_t chaos;
};

inline bool under_mpi() { return rill::launched_by_mpi_launcher(); }

inline std::vector<setup> setups() {
  if (under_mpi()) return {{0, 1, 0}, {0, 2, 0}};
  return {{1, 1, 0}, {2, 1, 0}, {2, 2, 3}, {4, 1, 0}, {4, 2, 7}, {8, 1, 11}, {8, 1, 0}, {3, 2, 42}};
}

// A setup as test names show it: r<ranks>_w<workers>_chaos<seed>, or mpi_w<workers> under mpirun.
inline std::string setup_name(const setup& s) {
  std::ostringstream name;
  if (under_mpi())
    name << "mpi_w" << s.workers;
  else
    name << 'r' << s.ranks << "_w" << s.workers << "_chaos" << s.chaos;
  return name.str();
}

inline std::string name_of(const ::testing::TestParamInfo<setup>& info) { return setup_name(info.param); }

// The command line of a runtime for `s`, with `extra` flags after the setup's own.
inline std::vector<std::string> flags_for(const setup& s, std::vector<std::string> extra) {
  std::vector<std::string> words{"multirank_test"};
  if (under_mpi()) {
    words.push_back("--rill:transport=mpi");
  } else {
    words.push_back("--rill:transport=local");
    words.push_back("--rill:ranks=" + std::to_string(s.ranks));
    words.push_back("--rill:chaos=" + std::to_string(s.chaos));
  }
  words.push_back("--rill:workers=" + std::to_string(s.workers));
  for (auto& e : extra) words.push_back(std::move(e));
  return words;
}

// Owns argv storage for a runtime built from flags.
struct args : test_argv {
  explicit args(const setup& s, std::vector<std::string> extra = {}) : test_argv(flags_for(s, std::move(extra))) {}
};

// Runs fn as rank 0's top-level task; a poisoned wait becomes a test failure naming its cause.
template <class F>
int run_checked(const setup& s, F fn, std::vector<std::string> extra = {}) {
  args a(s, std::move(extra));
  rill::runtime rt(a.argc, a.argv());
  return rt.run([&]() -> int {
    try {
      fn();
      return 0;
    } catch (const rill::poisoned_error& e) {
      ADD_FAILURE() << e.what();
      return 1;
    }
  });
}

// A check inside a rank's task: throws (failing the run) with the rank in the message.
inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::logic_error(what + " on rank " + std::to_string(rill::rank_me()));
}

// Counters indexed by rank, visible to every rank of this process (all of them under local,
// one under mpi). Tests check the slots of the ranks this process runs.
inline constexpr int max_ranks = 16;
using per_rank = std::array<std::atomic<std::uint64_t>, max_ranks>;
using per_pair = std::array<std::atomic<std::uint64_t>, max_ranks * max_ranks>;

template <class A>
void reset(A& a) {
  for (auto& x : a) x.store(0);
}

// The ranks this process hosts: all of them (local) or its own (mpi).
inline std::vector<int> hosted_ranks(int ranks, int my_mpi_rank) {
  if (!under_mpi()) {
    std::vector<int> all;
    for (int r = 0; r < ranks; ++r) all.push_back(r);
    return all;
  }
  return {my_mpi_rank};
}

}  // namespace rill_test
