// Members that call different collectives at the same position of a team, or the same one with
// another root or value type, stop the program with exit code 3 naming the collective and the
// ranks: never a wrong answer, never a hang (local transport, with and without chaos).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rill/rill.hpp"
#include "test_argv.hpp"

namespace {

// Runs fn on every one of `ranks` local ranks; returns run_spmd's result.
template <class F>
int spmd(int ranks, std::uint64_t chaos, F fn) {
  rill_test::test_argv a({"collective_mismatch_test", "--rill:transport=local", "--rill:ranks=" + std::to_string(ranks),
                          "--rill:workers=1", "--rill:chaos=" + std::to_string(chaos), "--rill:hang-report-s=0"});
  rill::runtime rt(a.argc, a.argv());
  return rt.run_spmd([&] {
    fn();
    return 0;
  });
}

const auto plus = [](long a, long b) { return a + b; };

struct mismatch {
  const char* name;
  void (*body)();
};

const mismatch cases[] = {
    {"broadcast_vs_reduce",
     [] {
       if (rill::rank_me() == 0)
         (void)rill::team::world().broadcast(7L, 0).get();
       else
         (void)rill::team::world().reduce(1L, plus, 0).get();
     }},
    {"allreduce_vs_barrier",
     [] {
       if (rill::rank_me() == 0)
         (void)rill::team::world().allreduce(1L, plus).get();
       else
         rill::team::world().barrier().wait();
     }},
    {"broadcast_roots_differ", [] { (void)rill::team::world().broadcast(7L, rill::rank_me() == 0 ? 0 : 1).get(); }},
    {"broadcast_types_differ",
     [] {
       if (rill::rank_me() == 0)
         (void)rill::team::world().broadcast(7L, 0).get();
       else
         (void)rill::team::world().broadcast(7.0, 0).get();
     }},
    {"gather_vs_allgather",
     [] {
       if (rill::rank_me() == 0)
         (void)rill::team::world().gather(1L, 0).get();
       else
         (void)rill::team::world().allgather(1L).get();
     }},
    {"barrier_vs_nothing_then_barrier_vs_broadcast",
     [] {
       rill::team::world().barrier().wait();
       if (rill::rank_me() == rill::rank_n() - 1)
         (void)rill::team::world().broadcast(1L, 0).get();
       else
         rill::team::world().barrier().wait();
     }},
};

class CollectiveMismatch : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveMismatch, StopsTheProgramNamingTheRanks) {
  const int ranks = GetParam();
  for (const mismatch& m : cases) {
    for (const std::uint64_t chaos : {0, 5}) {
      SCOPED_TRACE(std::string(m.name) + " chaos " + std::to_string(chaos));
      EXPECT_EXIT(spmd(ranks, chaos, m.body), ::testing::ExitedWithCode(rill::exit_fatal),
                  "collective #[0-9]+ of team .*rank [0-9]+ .*rank [0-9]+");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ranks, CollectiveMismatch, ::testing::Values(2, 4));

}  // namespace
