// A3 (HPX-5 Fig. 1): how moving relocatable blocks evens out an R-MAT graph's partitions.
//
// An R-MAT graph (A = 0.57, B = C = 0.19, no label permutation, as the paper) is cut into
// partitions of consecutive vertices; each partition's adjacency (CSR: its edge count, vertex
// offsets, neighbours) is one rill::gas block, placed blocked over the ranks. A rank's load is the
// edge count of the partitions it holds; the imbalance factor is the largest load over the mean.
// While the most loaded rank holds 1.4 times the mean or more, its partition with the fewest
// edges moves (rill::gas::migrate, for real) to a rank the policy picks -- the least loaded, the
// predecessor, the successor, or one at random -- as long as that lowers the pair's larger load.
// Reported per policy: imbalance before (the peer: no migration) and after, moves, bytes moved,
// and the time of the moves. The loads after are measured from where the blocks actually are.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "kronecker.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

enum class policy { least_loaded, predecessor, successor, random };
constexpr policy policies[] = {policy::least_loaded, policy::predecessor, policy::successor, policy::random};
const char* name_of(policy p) {
  switch (p) {
    case policy::least_loaded: return "least-loaded";
    case policy::predecessor: return "predecessor";
    case policy::successor: return "successor";
    case policy::random: return "random";
  }
  return "?";
}

// Each partition's CSR block: [edges, offsets[per + 1], neighbours...].
std::vector<std::vector<std::uint64_t>> partitions(const bench::kronecker& g, std::uint64_t per) {
  const std::uint64_t parts = g.vertices() / per;
  std::vector<std::vector<std::uint64_t>> adj(g.vertices());
  g.for_edges(0, g.edges(), g.labels(), [&](std::uint64_t a, std::uint64_t b) {
    if (a == b) return;
    adj[a].push_back(b);
    adj[b].push_back(a);
  });
  std::vector<std::vector<std::uint64_t>> out(parts);
  for (std::uint64_t p = 0; p < parts; ++p) {
    std::vector<std::uint64_t>& c = out[p];
    c.push_back(0);
    std::uint64_t at = 0;
    for (std::uint64_t v = p * per; v < (p + 1) * per; ++v) {
      c.push_back(at);
      at += adj[v].size();
    }
    c.push_back(at);
    c[0] = at;
    for (std::uint64_t v = p * per; v < (p + 1) * per; ++v) c.insert(c.end(), adj[v].begin(), adj[v].end());
  }
  return out;
}

double imbalance(const std::vector<std::uint64_t>& load) {
  std::uint64_t max = 0, sum = 0;
  for (auto l : load) {
    max = std::max(max, l);
    sum += l;
  }
  return sum == 0 ? 1.0 : static_cast<double>(max) * static_cast<double>(load.size()) / static_cast<double>(sum);
}

// Loads measured from the blocks: each partition's edge count read at its block, added to the
// rank that holds it.
std::vector<std::uint64_t> measured_loads(const std::vector<rill::gaddr>& blocks, int ranks) {
  std::vector<std::uint64_t> load(static_cast<std::size_t>(ranks), 0);
  for (rill::gaddr b : blocks)
    load[static_cast<std::size_t>(rill::gas::owner(b).get())] +=
        rill::gas::call<std::uint64_t>(b, [](std::uint64_t& edges) { return edges; }).get();
  return load;
}

struct outcome {
  double before = 0, after = 0, seconds = 0;
  std::uint64_t moves = 0, bytes = 0;
};

outcome balance(policy pol, const std::vector<rill::gaddr>& blocks, const std::vector<std::uint64_t>& edges,
                const std::vector<std::uint64_t>& bytes, int ranks, double threshold) {
  outcome o;
  std::vector<int> owner(blocks.size());
  for (std::size_t p = 0; p < blocks.size(); ++p) owner[p] = rill::gas::owner(blocks[p]).get();
  std::vector<std::uint64_t> load = measured_loads(blocks, ranks);
  o.before = imbalance(load);
  std::mt19937_64 random(42);
  std::uint64_t sum = 0;
  for (auto l : load) sum += l;
  const double mean = static_cast<double>(sum) / ranks;
  const auto t0 = bench::clock::now();
  for (std::size_t step = 0; step < blocks.size(); ++step) {
    const int src = static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
    if (static_cast<double>(load[static_cast<std::size_t>(src)]) < threshold * mean) break;
    std::size_t lightest = blocks.size();
    for (std::size_t p = 0; p < blocks.size(); ++p)
      if (owner[p] == src && edges[p] > 0 && (lightest == blocks.size() || edges[p] < edges[lightest])) lightest = p;
    if (lightest == blocks.size()) break;
    int dst = src;
    switch (pol) {
      case policy::least_loaded:
        dst = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
        break;
      case policy::predecessor: dst = (src + ranks - 1) % ranks; break;
      case policy::successor: dst = (src + 1) % ranks; break;
      case policy::random:
        dst = (src + 1 + static_cast<int>(random() % static_cast<std::uint64_t>(ranks - 1))) % ranks;
        break;
    }
    const auto s = static_cast<std::size_t>(src), d = static_cast<std::size_t>(dst);
    if (load[d] + edges[lightest] >= load[s]) break;  // the move would not lower the pair's larger load
    rill::gas::migrate(blocks[lightest], dst).wait();
    owner[lightest] = dst;
    load[s] -= edges[lightest];
    load[d] += edges[lightest];
    ++o.moves;
    o.bytes += bytes[lightest];
  }
  o.seconds = bench::seconds_since(t0);
  o.after = imbalance(measured_loads(blocks, ranks));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::mpi_peer::init(argc, argv);
  CLI::App app{"A3: R-MAT partition imbalance before and after moving relocatable blocks, per policy"};
  app.allow_extras();
  int scale = 16, per_log = 6;
  double threshold = 1.4;
  bool quick = false;
  app.add_option("--scale", scale, "log2 of the vertices")->check(CLI::Range(8, 22));
  app.add_option("--partition-log", per_log, "log2 of the vertices per partition")->check(CLI::Range(2, 16));
  app.add_option("--threshold", threshold, "move while the most loaded rank holds this times the mean");
  app.add_flag("--quick", quick, "scale 12");
  CLI11_PARSE(app, argc, argv);
  if (quick) scale = std::min(scale, 12);
  const bench::kronecker g{scale, 16, 1, false};
  const std::uint64_t per = std::uint64_t{1} << per_log;
  {
    rill::runtime rt(argc, argv);
    const int workers = rt.options().workers;
    rt.run([&] {
      const int n = rill::rank_n();
      const auto csr = partitions(g, per);
      std::vector<std::uint64_t> edges, bytes;
      for (const auto& c : csr) {
        edges.push_back(c[0]);
        bytes.push_back(c.size() * 8);
      }
      for (policy pol : policies) {
        // A fresh blocked placement for each policy.
        std::vector<rill::gaddr> blocks;
        const auto parts = static_cast<std::uint64_t>(csr.size());
        for (std::uint64_t p = 0; p < parts; ++p) {
          const int home = static_cast<int>(p * static_cast<std::uint64_t>(n) / parts);
          blocks.push_back(rill::gas::alloc(csr[p].size() * 8, rill::dist::local(home)));
          rill::gas::write(blocks.back(), csr[p]).wait();
        }
        const outcome o = balance(pol, blocks, edges, bytes, n, threshold);
        bench::result r;
        r.id = "A3";
        r.case_name = fmt::format("R-MAT scale {}, {} partitions of {} vertices, {} ranks {}, {}", scale, parts, per, n,
                                  mpi ? "mpi" : "local", name_of(pol));
        r.metric = "imbalance factor (max load / mean)";
        r.unit = "ratio";
        r.higher_is_better = false;
        r.rill = {o.after};
        r.peer = "no migration";
        r.peer_values = {o.before};
        r.extra = {{"ranks", n},
                   {"workers", workers},
                   {"transport", mpi ? "mpi" : "local"},
                   {"policy", name_of(pol)},
                   {"threshold", threshold},
                   {"moves", o.moves},
                   {"bytes_moved", o.bytes},
                   {"move_seconds", o.seconds}};
        bench::emit(r);
        for (rill::gaddr b : blocks) rill::gas::free(b).wait();
      }
      return 0;
    });
  }
  if (mpi) MPI_Finalize();
  return 0;
}
