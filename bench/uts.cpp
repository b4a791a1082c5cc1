// G1 — UTS, the Unbalanced Tree Search benchmark (BENCHMARKS.md; Grappa §4, Fig. 2).
//
//   uts -t 1 -a 3 -d 10 -b 4 -r 19                    the reference's flags (here T1); sequential
//   uts <tree flags> --impl rill --rill:workers=2       one traversal with Rill (or tbb, openmp, seq,
//                                                       rill-queued: every task queued, no may_inline,
//                                                       rill-latch: Rill without rill::finish,
//                                                       rill-dist: async_any on every rank, stealing)
//   uts <tree flags> --bench --name T1 [--quick]        bench/run's mode: one JSON line
//   uts <tree flags> --bench-ranks --name T1 [--quick]  2 ranks x 1 worker against 1 rank x 2 workers
//                                                       (bench/uts_across_ranks.cpp): one JSON line
//   mpirun -np 2 uts <tree flags> --bench-ranks ...     the same, the 2 ranks on the mpi transport
//
// Prints the reference's statistics (tree size, depth, leaves) and nodes/s. In --bench mode the
// tree is traversed sequentially once, then by Rill, TBB and OpenMP tasks with the same number of
// threads (--rill:workers), each several times; every traversal's statistics must equal the
// sequential ones, and those the published ones when the flags are a published sample tree
// (T1..T5, T1L..T3L). The repetitions of the three interleave, all inside runtime::run (the peers
// on a thread of their own).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"
#include "uts/traverse.hpp"
#include "uts/tree.hpp"
#include "uts_across_ranks.hpp"

namespace {

const uts::sample* published_match(const uts::params& p) {
  for (const char* name : {"T1", "T2", "T3", "T4", "T5", "T1L", "T2L", "T3L"}) {
    const uts::sample* s = uts::find_sample(name);
    const uts::params q = uts::sample_params(*s);
    if (q.type == p.type && q.b0 == p.b0 && q.root_seed == p.root_seed && q.granularity == p.granularity) {
      const bool bin = p.type == uts::tree_type::binomial || p.type == uts::tree_type::hybrid;
      const bool geo = p.type != uts::tree_type::binomial;
      const bool bin_same = !bin || (q.nonleaf_bf == p.nonleaf_bf && q.nonleaf_prob == p.nonleaf_prob);
      const bool geo_same = !geo || (q.gen_mx == p.gen_mx && q.shape == p.shape);
      const bool hyb_same = p.type != uts::tree_type::hybrid || q.shift_depth == p.shift_depth;
      if (bin_same && geo_same && hyb_same) return s;
    }
  }
  return nullptr;
}

const char* type_word(uts::tree_type t) {
  switch (t) {
    case uts::tree_type::binomial: return "binomial";
    case uts::tree_type::geometric: return "geometric";
    case uts::tree_type::hybrid: return "hybrid";
    case uts::tree_type::balanced: return "balanced";
  }
  return "?";
}

void print_stats(const uts::counts& c, double seconds) {
  std::printf("Tree size = %llu, tree depth = %llu, num leaves = %llu (%.2f%%)\n",
              static_cast<unsigned long long>(c.nodes), static_cast<unsigned long long>(c.depth),
              static_cast<unsigned long long>(c.leaves),
              c.nodes ? 100.0 * static_cast<double>(c.leaves) / static_cast<double>(c.nodes) : 0.0);
  std::printf("Wallclock time = %.3f sec, performance = %.0f nodes/sec\n", seconds,
              static_cast<double>(c.nodes) / seconds);
}

struct timed {
  uts::counts c;
  double seconds;
};

timed time_one(const std::function<uts::counts()>& f) {
  const auto t0 = bench::clock::now();
  const uts::counts c = f();
  return {c, bench::seconds_since(t0)};
}

// Under mpirun, --bench-ranks makes a runtime on the mpi transport for each measurement, so MPI is
// initialised here (a runtime then leaves it initialised), and the runtime of main, which only
// reads the flags, runs on the local transport: two runtimes must not share MPI.
std::vector<char*> runtime_words(int argc, char** argv, bool mpi_ranks) {
  std::vector<char*> words(argv, argv + argc);
  static char local[] = "--rill:transport=local";
  if (mpi_ranks) words.insert(words.begin() + 1, local);
  words.push_back(nullptr);
  return words;
}

bool has_word(int argc, char** argv, std::string_view word) {
  return std::find(argv + 1, argv + argc, word) != argv + argc;
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi_ranks = rill::launched_by_mpi_launcher() && has_word(argc, argv, "--bench-ranks");
  if (mpi_ranks) bench::mpi_peer::init(argc, argv);
  // MPI ends after the runtime below, whichever way main returns (a bad command line too).
  struct finalize_mpi {
    bool initialised;
    ~finalize_mpi() {
      if (initialised) MPI_Finalize();
    }
  } const mpi_end{mpi_ranks};
  std::vector<char*> words = runtime_words(argc, argv, mpi_ranks);
  argc = static_cast<int>(words.size()) - 1;
  argv = words.data();
  rill::runtime rt(argc, argv);

  CLI::App app{"G1: UTS (Unbalanced Tree Search) with the reference's tree flags; Rill, TBB, OpenMP"};
  uts::params p;
  uts::add_options(app, p);
  std::string impl = "seq";
  bool bench_mode = false;
  bool quick = false;
  int reps = 5;
  std::string name = "tree";
  bool bench_ranks = false;
  app.add_option("--impl", impl, "traversal: seq, rill, rill-queued, rill-latch, rill-dist, tbb, openmp")
      ->check(CLI::IsMember({"seq", "rill", "rill-queued", "rill-latch", "rill-dist", "tbb", "openmp"}))
      ->capture_default_str();
  app.add_flag("--bench", bench_mode, "measure every traversal and print one JSON line (bench/run G1)");
  app.add_flag("--bench-ranks", bench_ranks,
               "measure 2 ranks x 1 worker (async_any, --rill:steal) against 1 rank x 2 workers; one JSON line");
  app.add_option("--reps", reps, "--bench: repetitions of each parallel traversal")->capture_default_str();
  app.add_flag("--quick", quick, "--bench: at most 3 repetitions");
  app.add_option("--name", name, "--bench: the tree's name in the JSON line's case")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (quick) reps = std::min(reps, 3);

  const uts::tree tree(p);
  const int workers = rt.options().workers;
  const uts::sample* published = published_match(p);

  if (bench_ranks) {
    const uts::counts seq = uts::traverse_sequential(tree);
    const char* policies[] = {"off", "random", "hierarchical"};
    const int rc = bench_across_ranks(tree, seq, name, p.describe(), policies[static_cast<int>(rt.options().steal)],
                                      reps, mpi_ranks);
    return rc;
  }
  if (!bench_mode) {
    std::printf("UTS - Unbalanced Tree Search (Rill bench/uts)\n");
    std::printf("Tree: %s%s\n", p.describe().c_str(),
                published ? fmt::format(" [sample {}]", published->name).c_str() : "");
    timed r{};
    int rc = 0;
    if (impl == "seq") {
      std::printf("Implementation: sequential\n");
      r = time_one([&] { return uts::traverse_sequential(tree); });
    } else if (impl == "tbb") {
      std::printf("Implementation: TBB task_group, %d threads\n", workers);
      r = time_one([&] { return uts::traverse_tbb(tree, workers); });
    } else if (impl == "openmp") {
      if (!uts::has_openmp()) {
        std::fputs("uts: built without OpenMP\n", stderr);
        return 2;
      }
      std::printf("Implementation: OpenMP tasks, %d threads\n", workers);
      r = time_one([&] { return uts::traverse_openmp(tree, workers); });
    } else {
      const char* how = impl == "rill-latch"    ? "spawn and a latch, may_inline"
                        : impl == "rill-dist"   ? "async_any on every rank, stealing"
                        : impl == "rill-queued" ? "finish and async, every task queued"
                                                : "finish and async, may_inline";
      std::printf("Implementation: Rill (%s), %d rank%s, %d worker%s per rank\n", how, rt.ranks(),
                  rt.ranks() == 1 ? "" : "s", workers, workers == 1 ? "" : "s");
      uts::prepare_distributed(tree, rt.ranks());
      bool here = false;  // under mpirun, the top-level task runs in rank 0's process only
      rc = rt.run([&] {
        here = true;
        const rill::rank_stats before = rill::stats();
        r = time_one([&] {
          if (impl == "rill-latch") return uts::traverse_rill_latch(tree);
          if (impl == "rill-dist") return uts::traverse_rill_distributed();
          return uts::traverse_rill(tree, impl == "rill-queued");
        });
        const rill::rank_stats after = rill::stats();
        std::printf("Rill on rank %d: %llu tasks run, %llu taken from another worker\n", rill::rank_me(),
                    static_cast<unsigned long long>(after.tasks_run - before.tasks_run),
                    static_cast<unsigned long long>(after.steals - before.steals));
      });
      if (!here) return rc;
    }
    std::fflush(stdout);
    print_stats(r.c, r.seconds);
    if (published && !(r.c == published->expected)) {
      std::printf("*** statistics differ from the published ones of %s: %llu nodes, depth %llu, %llu leaves\n",
                  published->name, static_cast<unsigned long long>(published->expected.nodes),
                  static_cast<unsigned long long>(published->expected.depth),
                  static_cast<unsigned long long>(published->expected.leaves));
      return 1;
    }
    return rc;
  }

  // --bench: the sequential reference, then Rill, TBB and OpenMP.
  const timed seq = time_one([&] { return uts::traverse_sequential(tree); });
  bench::progress("G1 {}: sequential {} nodes, depth {}, {} leaves, {:.3f} s", name, seq.c.nodes, seq.c.depth,
                  seq.c.leaves, seq.seconds);
  long errors = 0;
  if (published && !(seq.c == published->expected)) {
    bench::progress("G1 {}: sequential statistics differ from the published ones of {}", name, published->name);
    ++errors;
  }
  // One repetition of one traversal: checked against the sequential statistics, as nodes/s.
  const auto once = [&](const char* what, int rep, const std::function<uts::counts()>& f) {
    const timed t = time_one(f);
    if (!(t.c == seq.c)) {
      bench::progress("G1 {} {}: {} nodes, depth {}, {} leaves: differs from sequential", name, what, t.c.nodes,
                      t.c.depth, t.c.leaves);
      ++errors;
    }
    const double rate = static_cast<double>(t.c.nodes) / t.seconds;
    bench::progress("G1 {} {} rep {}: {:.3f} s, {:.3g} nodes/s", name, what, rep, t.seconds, rate);
    return rate;
  };
  // The peers run on a thread of their own (a plain stack, not a Rill worker's fiber); the Rill
  // worker that started it waits in join, the other idles.
  const auto off_worker = [](const std::function<double()>& f) {
    double r = 0;
    std::thread t([&] { r = f(); });
    t.join();
    return r;
  };

  // Repetitions interleave the traversals (in a rotating order), so that load from elsewhere on a
  // shared machine falls on all of them alike. rill-latch (spawn, a pending count and a latch)
  // shows what rill::finish costs, where the runtime has it; rill-queued what rill::may_inline
  // gains (every task queued, as rill::async does without it).
  struct contender {
    const char* name;
    bool on_worker;  // runs on the Rill worker (else on a thread of its own)
    std::function<uts::counts()> traverse;
    std::vector<double> rates;
  };
  std::vector<contender> all;
  all.push_back({"rill", true, [&] { return uts::traverse_rill(tree); }, {}});
  all.push_back({"tbb", false, [&] { return uts::traverse_tbb(tree, workers); }, {}});
  if (uts::has_openmp()) all.push_back({"openmp", false, [&] { return uts::traverse_openmp(tree, workers); }, {}});
  all.push_back({"rill-latch", true, [&] { return uts::traverse_rill_latch(tree); }, {}});
  all.push_back({"rill-queued", true, [&] { return uts::traverse_rill(tree, true); }, {}});
  const auto n = static_cast<int>(all.size());
  rt.run([&] {
    for (contender& c : all) {  // warm-up: task records, fiber stacks, deques, thread pools
      if (c.on_worker) {
        c.traverse();
      } else {
        off_worker([&] { return static_cast<double>(c.traverse().nodes); });
      }
    }
    for (int r = 0; r < reps; ++r) {
      for (int i = 0; i < n; ++i) {
        contender& c = all[static_cast<std::size_t>((r + i) % n)];
        const auto one = [&] { return once(c.name, r, c.traverse); };
        c.rates.push_back(c.on_worker ? one() : off_worker(one));
      }
    }
  });
  const auto rates_of = [&](const char* name) {
    for (const contender& c : all) {
      if (std::string(c.name) == name) return c.rates;
    }
    return std::vector<double>{};
  };
  const std::vector<double> rill_rates = rates_of("rill");
  const std::vector<double> tbb_rates = rates_of("tbb");
  const std::vector<double> omp_rates = rates_of("openmp");
  const std::vector<double> latch_rates = rates_of("rill-latch");
  const std::vector<double> queued_rates = rates_of("rill-queued");

  const std::string wtext = fmt::format("{} worker{}", workers, workers == 1 ? "" : "s");
  bench::result res;
  res.id = "G1";
  res.case_name = fmt::format("{} {}{}, 1 rank, {}", name, type_word(p.type),
                              published ? "" : " (no published count: checked against sequential)", wtext);
  res.metric = "nodes/s";
  res.unit = "nodes/s";
  res.higher_is_better = true;
  res.rill = rill_rates;
  const double tbb_median = bench::summarize(tbb_rates).median;
  const double omp_median = omp_rates.empty() ? 0.0 : bench::summarize(omp_rates).median;
  const bool tbb_faster = tbb_median >= omp_median;
  res.peer = tbb_faster ? "TBB task_group" : "OpenMP tasks (libgomp)";
  res.peer_values = tbb_faster ? tbb_rates : omp_rates;
  res.extra = {{"ranks", 1},
               {"workers", workers},
               {"transport", "local"},
               {"tree", name},
               {"flags", p.describe()},
               {"nodes", seq.c.nodes},
               {"depth", seq.c.depth},
               {"leaves", seq.c.leaves},
               {"published_nodes", published ? nlohmann::json(published->expected.nodes) : nlohmann::json()},
               {"rill_join", "finish/async(may_inline)"},
               {"sequential_nodes_per_s", static_cast<double>(seq.c.nodes) / seq.seconds},
               {"errors", errors}};
  const double rill_median = bench::summarize(rill_rates).median;
  nlohmann::json others = nlohmann::json::array();
  const auto other = [&](const char* peer, const std::vector<double>& v) {
    const bench::summary s = bench::summarize(v);
    others.push_back({{"peer", peer},
                      {"value", s.median},
                      {"min", s.min},
                      {"max", s.max},
                      {"runs", s.runs},
                      {"ratio", bench::oriented_ratio(rill_median, s.median, true)}});
  };
  other("TBB task_group", tbb_rates);
  if (!omp_rates.empty()) other("OpenMP tasks (libgomp)", omp_rates);
  res.extra["other_peers"] = others;
  const auto variant = [&](const char* key, const std::vector<double>& v) {
    const bench::summary s = bench::summarize(v);
    res.extra[key] = {{"value", s.median}, {"min", s.min}, {"max", s.max}, {"runs", s.runs}};
  };
  variant("rill_latch", latch_rates);
  variant("rill_queued", queued_rates);
  bench::emit(res);
  return errors == 0 ? 0 : 1;
}
