// bench/uts: the UTS tree definition reproduces the published sample trees (the check that our
// SHA-1 streams, distributions and statistics are the benchmark's), and the TBB, OpenMP and Rill
// traversals count what the sequential one counts (the distributed one over 2-4 ranks, with chaos).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "one_rank.hpp"
#include "rill/runtime.hpp"
#include "uts/traverse.hpp"
#include "uts/tree.hpp"

namespace {

uts::params parse(const std::string& flags) {
  CLI::App app;
  uts::params p;
  uts::add_options(app, p);
  app.parse(flags, false);
  return p;
}

TEST(UtsParams, ReferenceFlagsAndDefaults) {
  const uts::params d;
  EXPECT_EQ(d.type, uts::tree_type::geometric);
  EXPECT_EQ(d.b0, 4.0);
  EXPECT_EQ(d.root_seed, 0);
  EXPECT_EQ(d.nonleaf_bf, 4);
  EXPECT_EQ(d.nonleaf_prob, 15.0 / 64.0);
  EXPECT_EQ(d.gen_mx, 6);
  EXPECT_EQ(d.shape, uts::geo_shape::linear);
  EXPECT_EQ(d.shift_depth, 0.5);
  EXPECT_EQ(d.granularity, 1);

  const uts::params p = parse("-t 2 -a 1 -d 16 -b 6 -r 7 -q 0.234375 -m 4 -f 0.25 -g 3");
  EXPECT_EQ(p.type, uts::tree_type::hybrid);
  EXPECT_EQ(p.shape, uts::geo_shape::expdec);
  EXPECT_EQ(p.gen_mx, 16);
  EXPECT_EQ(p.b0, 6.0);
  EXPECT_EQ(p.root_seed, 7);
  EXPECT_EQ(p.nonleaf_prob, 0.234375);
  EXPECT_EQ(p.nonleaf_bf, 4);
  EXPECT_EQ(p.shift_depth, 0.25);
  EXPECT_EQ(p.granularity, 3);
  EXPECT_THROW(parse("-t 4"), CLI::ValidationError);
  EXPECT_THROW(parse("-a 5"), CLI::ValidationError);
}

TEST(UtsTree, RandomNumbersComeFromTheStateTail) {
  uts::node n{};
  n.state[16] = 0xff;  // the sign bit is dropped
  n.state[17] = 0x12;
  n.state[18] = 0x34;
  n.state[19] = 0x56;
  EXPECT_EQ(uts::rng_rand(n), 0x7f123456);
  EXPECT_EQ(uts::to_prob(0), 0.0);
  EXPECT_EQ(uts::to_prob(1 << 30), 0.5);
  EXPECT_LT(uts::to_prob(0x7fffffff), 1.0);
}

TEST(UtsTree, ChildrenAreDeterministicAndDistinct) {
  const uts::tree t(parse("-t 1 -a 3 -d 10 -b 4 -r 19"));
  const uts::node r = t.root();
  EXPECT_EQ(r.height, 0);
  EXPECT_EQ(t.root().state, r.state);
  const uts::node a = t.child(r, 0);
  const uts::node b = t.child(r, 1);
  EXPECT_EQ(a.height, 1);
  EXPECT_NE(a.state, b.state);
  EXPECT_EQ(t.child(r, 1).state, b.state);
  // Compute granularity repeats the same hash: the tree does not change.
  const uts::tree g(parse("-t 1 -a 3 -d 10 -b 4 -r 19 -g 3"));
  EXPECT_EQ(g.child(r, 1).state, b.state);
}

TEST(UtsTree, BinomialRootHasFloorBChildren) {
  const uts::tree t(parse("-t 0 -b 2000 -q 0.124875 -m 8 -r 42"));
  EXPECT_EQ(t.num_children(t.root()), 2000);
  const uts::tree u(parse("-t 0 -b 7.5 -q 0.1 -m 8 -r 1"));
  EXPECT_EQ(u.num_children(u.root()), 7);
}

// The sample trees of the UTS distribution, with the sizes, depths and leaf counts it publishes.
class UtsSample : public testing::TestWithParam<const char*> {};

TEST_P(UtsSample, SequentialTraversalReproducesThePublishedStatistics) {
  const uts::sample* s = uts::find_sample(GetParam());
  ASSERT_NE(s, nullptr);
  const uts::counts c = uts::traverse_sequential(uts::tree(uts::sample_params(*s)));
  EXPECT_EQ(c.nodes, s->expected.nodes) << s->flags;
  EXPECT_EQ(c.leaves, s->expected.leaves) << s->flags;
  EXPECT_EQ(c.depth, s->expected.depth) << s->flags;
}

INSTANTIATE_TEST_SUITE_P(Published, UtsSample, testing::Values("T1", "T2", "T3", "T4", "T5"),
                         [](const testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// Smaller trees of each type, for the parallel traversals (tens of thousands of nodes).
const std::vector<std::string> small_trees = {
    "-t 1 -a 3 -d 7 -b 4 -r 19",                   // geometric, fixed
    "-t 1 -a 0 -d 12 -b 4 -r 34",                  // geometric, linear decrease
    "-t 1 -a 2 -d 10 -b 4 -r 502",                 // geometric, cyclic
    "-t 1 -a 1 -d 10 -b 4 -r 0",                   // geometric, exponential decrease
    "-t 0 -b 100 -q 0.124875 -m 8 -r 42",          // binomial
    "-t 2 -a 0 -d 12 -b 4 -r 1 -q 0.234375 -m 4",  // hybrid
};

TEST(UtsParallel, TbbAndOpenMpCountWhatTheSequentialTraversalCounts) {
  for (const std::string& flags : small_trees) {
    const uts::tree t(parse(flags));
    const uts::counts seq = uts::traverse_sequential(t);
    EXPECT_GT(seq.nodes, 1u) << flags;
    for (int threads : {1, 2}) {
      EXPECT_EQ(uts::traverse_tbb(t, threads), seq) << flags << ", TBB, " << threads << " threads";
      if (uts::has_openmp()) {
        EXPECT_EQ(uts::traverse_openmp(t, threads), seq) << flags << ", OpenMP, " << threads << " threads";
      }
    }
  }
}

TEST(UtsParallel, RillCountsWhatTheSequentialTraversalCounts) {
  for (int workers : {1, 2}) {
    std::vector<uts::counts> expected;
    std::vector<uts::tree> trees;
    for (const std::string& flags : small_trees) {
      trees.emplace_back(parse(flags));
      expected.push_back(uts::traverse_sequential(trees.back()));
    }
    std::vector<uts::counts> got, got_latch;
    rill_test::run_on_one_rank(workers, [&] {
      for (const uts::tree& t : trees) {
        got.push_back(uts::traverse_rill(t));
        got_latch.push_back(uts::traverse_rill_latch(t));
      }
    });
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(got[i], expected[i]) << small_trees[i] << ", Rill, " << workers << " workers";
      EXPECT_EQ(got_latch[i], expected[i]) << small_trees[i] << ", Rill (latch), " << workers << " workers";
    }
  }
}

// Every child an async_any task, stolen by idle ranks: the counts summed over the ranks are the
// sequential ones, whatever the order in which chaos delivers steal requests, replies and tasks.
TEST(UtsParallel, RillAcrossRanksCountsWhatTheSequentialTraversalCounts) {
  for (const std::string& flags : small_trees) {
    const uts::tree t(parse(flags));
    const uts::counts expected = uts::traverse_sequential(t);
    for (const auto& [ranks, chaos, steal] :
         {std::tuple{2, 0, "random"}, std::tuple{3, 5, "random"}, std::tuple{4, 9, "hierarchical"}}) {
      rill_test::test_argv a(rill_test::command_line(
          "unit_test", {"--rill:transport=local", "--rill:ranks=" + std::to_string(ranks), "--rill:workers=1",
                        "--rill:chaos=" + std::to_string(chaos), std::string("--rill:steal=") + steal}));
      rill::runtime rt(a.argc, a.argv());
      uts::prepare_distributed(t, ranks);
      uts::counts got;
      EXPECT_EQ(rt.run([&] { got = uts::traverse_rill_distributed(); }), 0);
      EXPECT_EQ(got, expected) << flags << ", " << ranks << " ranks, chaos " << chaos << ", " << steal;
    }
  }
}

}  // namespace
