// G1's distributed case: UTS on 2 ranks x 1 worker, every child an async_any task that the idle
// rank steals, against Rill on 1 rank x 2 workers (finish/async) -- the same two cores either way.
// The target is the ratio: at least 0.9.
//
// Each repetition of each configuration runs in a runtime of its own (a runtime runs once); the
// two configurations alternate so that load from elsewhere falls on both alike. The 2 ranks run
// on the local transport, or under mpirun on the mpi transport: then the 1-rank reference runs in
// rank 0's process while rank 1 sleeps. Every traversal's statistics must equal the sequential
// ones.
#include "uts_across_ranks.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"
#include "uts/traverse.hpp"

namespace {

// Runs one traversal in a fresh runtime made from these flags (a runtime runs once).
struct fresh_runtime {
  std::vector<std::string> flags;

  double nodes_per_s(const std::function<uts::counts()>& traverse, const uts::counts& expected, long& errors) {
    std::vector<std::string> words{"uts"};  // (the runtime consumes its flags from argv: a new copy each time)
    words.insert(words.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(words.size());
    rill::runtime rt(argc, argv.data());
    double rate = 0;
    rt.run([&] {
      const auto t0 = bench::clock::now();
      const uts::counts c = traverse();
      const double s = bench::seconds_since(t0);
      if (!(c == expected)) ++errors;
      rate = static_cast<double>(c.nodes) / s;
    });
    return rate;
  }
};

}  // namespace

int bench_across_ranks(const uts::tree& tree, const uts::counts& sequential, const std::string& name,
                       const std::string& flags_text, const std::string& steal, int reps, bool mpi) {
  constexpr int ranks = 2;
  if (mpi && bench::mpi_peer::world_size() != ranks) {
    if (bench::mpi_peer::world_rank() == 0)
      std::fprintf(stderr, "uts --bench-ranks: run it with mpirun -np %d, not %d\n", ranks,
                   bench::mpi_peer::world_size());
    return 2;
  }
  const bool reference_here = !mpi || bench::mpi_peer::world_rank() == 0;
  const std::string transport = mpi ? "mpi" : "local";
  uts::prepare_distributed(tree, ranks);
  fresh_runtime one_rank{{"--rill:transport=local", "--rill:ranks=1", "--rill:workers=2"}};
  std::vector<std::string> two_rank_flags{"--rill:transport=" + transport, "--rill:workers=1", "--rill:steal=" + steal};
  if (!mpi) two_rank_flags.push_back(fmt::format("--rill:ranks={}", ranks));
  fresh_runtime two_ranks{two_rank_flags};
  long errors = 0;
  std::vector<double> spread, local;
  for (int r = -1; r < reps; ++r) {  // r == -1: warm-up
    const double d = two_ranks.nodes_per_s([] { return uts::traverse_rill_distributed(); }, sequential, errors);
    double l = 0;
    if (reference_here) l = one_rank.nodes_per_s([&] { return uts::traverse_rill(tree, true); }, sequential, errors);
    if (mpi) bench::mpi_peer::sleeping_barrier();
    if (!reference_here) continue;
    bench::progress("G1 {} across ranks rep {}: 2 ranks x 1 worker {:.3g} nodes/s, 1 rank x 2 workers {:.3g}", name, r,
                    d, l);
    if (r < 0) continue;
    spread.push_back(d);
    local.push_back(l);
  }
  if (!reference_here) return 0;  // (the top-level tasks, and their checks, ran on rank 0)
  bench::result res;
  res.id = "G1";
  res.case_name = fmt::format("{}, {} ranks x 1 worker ({}), async_any + stealing ({}) vs 1 rank x 2 workers", name,
                              ranks, transport, steal);
  res.metric = "nodes/s";
  res.unit = "nodes/s";
  res.higher_is_better = true;
  res.rill = spread;
  res.peer = "Rill, 1 rank x 2 workers (finish/async)";
  res.peer_values = local;
  res.extra = {{"ranks", ranks},      {"workers", 1},   {"transport", transport},    {"tree", name},
               {"flags", flags_text}, {"steal", steal}, {"nodes", sequential.nodes}, {"target_ratio", 0.9},
               {"errors", errors}};
  bench::emit(res);
  return errors == 0 ? 0 : 1;
}
