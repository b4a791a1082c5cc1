// Termination detection (src/runtime/termination.hpp), its waves travelling down and back up a tree
// of the ranks (--rill:tree-fanout): a run returns only once every message has been handled --
// here chains of messages still travelling when the top-level task returns, each hop detached
// into a task -- at fan-outs from 2 (deep trees) to 16, and each rank receives exactly its parent's
// probe and its children's answers each wave (counted by --rill:stats).
#include <mpi.h>

#include <array>
#include <atomic>
#include <sstream>
#include <string>
#include <vector>

#include "common/rank_tree.hpp"
#include "harness.hpp"
#include "stderr_capture.hpp"

namespace rill_test {
namespace {

struct tree_setup {
  setup base;
  int fanout;
};

std::vector<tree_setup> tree_setups() {
  if (under_mpi()) return {{{0, 1, 0}, 2}, {{0, 2, 0}, 3}};
  return {{{1, 1, 0}, 2},   {{5, 1, 3}, 2},   {{8, 2, 7}, 2}, {{17, 1, 0}, 4},
          {{40, 1, 11}, 3}, {{64, 1, 0}, 16}, {{64, 1, 5}, 2}};
}

std::string tree_setup_name(const ::testing::TestParamInfo<tree_setup>& info) {
  return setup_name(info.param.base) + "_f" + std::to_string(info.param.fanout);
}

class termination : public ::testing::TestWithParam<tree_setup> {};

constexpr int most_ranks = 64;
constexpr int chains = 50, length = 40;
std::array<std::atomic<std::uint64_t>, most_ranks> hops_seen{};

void hop(int left) {
  hops_seen[static_cast<std::size_t>(rill::rank_me())]++;
  if (left == 0) return;
  rill::spawn([left] { rill::am::send((rill::rank_me() * 7 + left) % rill::rank_n(), hop, left - 1); });
}

// The values of counter `name` in the --rill:stats table of `text`, one per column (rank) printed
// by this process; empty if the row is missing.
std::vector<std::uint64_t> stats_row(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first != name) continue;
    std::vector<std::uint64_t> values;
    for (std::uint64_t v; words >> v;) values.push_back(v);
    return values;
  }
  return {};
}

// Runs the chains from rank 0 (run) or from every rank (run_spmd, whose tasks' ends reach rank 0
// before the waves start), returning at once; then checks that every hop happened before the run
// returned, and each rank's count of the waves' messages: one probe (but rank 0) and one answer
// per child, every wave.
void chains_end_before_the_run(const tree_setup& ts, bool spmd) {
  reset(hops_seen);
  std::string stats;
  int ranks = 0;
  {
    stderr_capture err;
    args a(ts.base, {"--rill:tree-fanout=" + std::to_string(ts.fanout), "--rill:stats"});
    rill::runtime rt(a.argc, a.argv());
    ranks = rt.ranks();
    ASSERT_LE(ranks, most_ranks);
    const auto start = [spmd] {
      const int n = rill::rank_n(), first = spmd ? rill::rank_me() : 0, step = spmd ? n : 1;
      for (int c = first; c < chains; c += step) rill::am::send(c % n, hop, length);
      return 23;  // at once: the chains are still travelling
    };
    EXPECT_EQ(spmd ? rt.run_spmd(start) : rt.run(start), 23);
    stats = err.text();
  }
  int my_rank = 0;
  if (under_mpi()) MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  std::uint64_t here = 0;
  for (int r : hosted_ranks(ranks, my_rank)) here += hops_seen[static_cast<std::size_t>(r)].load();
  std::uint64_t total = here;
  if (under_mpi()) MPI_Allreduce(&here, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, static_cast<std::uint64_t>(chains) * (length + 1)) << "the run ended before every hop";

  // Waves run by rank 0 (its process tells the others under mpi), and each rank's wave messages.
  const std::vector<int> hosted = hosted_ranks(ranks, my_rank);
  const std::vector<std::uint64_t> waves_row = stats_row(stats, "runtime.waves");
  const std::vector<std::uint64_t> messages = stats_row(stats, "runtime.wave_messages");
  ASSERT_EQ(messages.size(), hosted.size()) << stats;
  ASSERT_EQ(waves_row.size(), hosted.size()) << stats;
  std::uint64_t waves = my_rank == 0 ? waves_row[0] : 0;
  if (under_mpi()) MPI_Bcast(&waves, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  EXPECT_GE(waves, 2u) << "the method ends on two waves that agree";
  const rill::detail::rank_tree tree{ranks, ts.fanout};
  for (std::size_t i = 0; i < hosted.size(); ++i) {
    const int r = hosted[i];
    EXPECT_EQ(messages[i], waves * static_cast<std::uint64_t>(tree.children(r) + (r != 0 ? 1 : 0)))
        << "rank " << r << " of " << ranks << ", fan-out " << ts.fanout << ", " << waves << " waves";
  }
}

TEST_P(termination, run_returns_after_every_message_and_each_rank_hears_only_its_tree_neighbours) {
  chains_end_before_the_run(GetParam(), false);
}

TEST_P(termination, run_spmd_returns_after_every_message_and_each_rank_hears_only_its_tree_neighbours) {
  chains_end_before_the_run(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(setups, termination, ::testing::ValuesIn(tree_setups()), tree_setup_name);

}  // namespace
}  // namespace rill_test
