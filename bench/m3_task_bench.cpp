// M3 — Task Bench METG(50%) (Slaughter et al., SC20): the minimum effective task granularity of
// graphs of width 4 and 1000 timesteps for the patterns trivial, no_comm, stencil_1d, fft, tree,
// nearest, spread and random_nearest, with the compute_bound kernel (task_bench/*.hpp: the graphs,
// the kernel, the sweep and its interpolation).
//
//   mpirun -np 2 rill_bench_m3 --mpi-peer-only F    MPI alone (2 ranks, Isend/Irecv per edge
//                                                   between ranks, Task Bench's mpi/nonblock
//                                                   scheme) at MPI_THREAD_SINGLE; writes file F
//   mpirun -np 2 rill_bench_m3 --rill:workers=1 --mpi-peer-results F
//                                                   Rill 2 ranks x 1 worker on the mpi transport,
//                                                   reported beside the METGs in F
//   rill_bench_m3 --rill:ranks=1 --rill:workers=2   Rill 1 rank x 2 workers and OpenMP tasks
//                                                   with depend clauses, 2 threads
//
// The MPI peer runs in processes of its own, at MPI_THREAD_SINGLE as task-bench's mpi/nonblock
// does: Rill's processes must initialise MPI at MPI_THREAD_SERIALIZED, and Open MPI charges that
// level on every call (mpi_peer.hpp), so a peer in Rill's processes would be weaker than the code
// it stands for. bench/run runs the peer's processes right before Rill's. The OpenMP peer runs in
// Rill's process and takes turns with it, pattern by pattern (the peer first in even repetitions,
// Rill first in odd ones), so that both see the same load on a shared machine; never at the same
// time, so each has both cores to itself: from the one rank's top-level task, while the runtime's
// other worker sleeps. Points are block-distributed (2 per rank). Every version checks every
// task's inputs by their (step, point) tags; `errors` must be 0, and the program exits 1 if not.
//
// The same graphs as launches on logical regions (task_bench/regions_version.hpp: rank 0 issues
// every task with region requirements, the runtime finds the dependences and moves the tags) run
// after each pattern's sweeps, and their METG is reported beside the SPMD Rill version's
// (`--no-regions` leaves them out).
//
// Peak: the kernel alone on both cores at once (each MPI rank, or two threads). The best of 30
// short runs at start-up gives the machine's peak (peak_gflops); the efficiencies divide by the
// rate sustained right before each pattern's sweeps (the median of 5 runs of 4 ms on all
// cores), which is that peak on a quiet machine and what the load leaves on a shared one (the
// JSON's kernel_ns_per_iteration). Each repetition sweeps every pattern and the JSON line gives
// the median, min and max of the per-repetition METGs.
#include <mpi.h>
#include <CLI/CLI.hpp>

#ifndef RILL_BENCH_OPENMP
#define RILL_BENCH_OPENMP 0
#endif
#if RILL_BENCH_OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"
#include "task_bench/graph.hpp"
#include "task_bench/kernel.hpp"
#include "task_bench/metg.hpp"
#include "task_bench/regions_version.hpp"
#include "task_bench/rill_version.hpp"

namespace {

using task_bench::edge_table;
using task_bench::tag;

struct measured {
  double seconds = 0;
  long errors = 0;
};

// ---- MPI: Task Bench's mpi/nonblock scheme ---------------------------------------------------

// Per timestep: post an Irecv for every input that lives on another rank and an Isend of every
// previous output that a task on another rank takes, wait for all, then run this rank's tasks.
measured mpi_run(const edge_table& table, long iterations) {
  const task_bench::graph& g = table.g();
  const int me = bench::mpi_peer::world_rank();
  const int n = bench::mpi_peer::world_size();
  const long first = task_bench::first_point(g.width, me, n);
  const long last = task_bench::first_point(g.width, me + 1, n);
  const long local = std::max(1L, last - first);
  std::vector<tag> prev(static_cast<std::size_t>(local)), cur(static_cast<std::size_t>(local));
  std::vector<tag> inbox(static_cast<std::size_t>(local * task_bench::max_edges));
  std::vector<MPI_Request> reqs;
  reqs.reserve(static_cast<std::size_t>(2 * local * task_bench::max_edges));
  long errors = 0;
  double sink = 0;
  auto idx = [&](long p) { return static_cast<std::size_t>(p - first); };
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = bench::clock::now();
  for (long t = 0; t < g.steps; ++t) {
    reqs.clear();
    const long hi = std::min(last, g.width_at(t));
    for (long p = first; p < hi; ++p) {
      const task_bench::task_edges& e = table.at(t, p);
      for (int k = 0; k < e.n_in; ++k) {
        const long q = e.in[static_cast<std::size_t>(k)];
        const int src = task_bench::owner_of(q, g.width, n);
        if (src == me) continue;
        reqs.emplace_back();
        MPI_Irecv(&inbox[idx(p) * task_bench::max_edges + static_cast<std::size_t>(k)], sizeof(tag), MPI_BYTE, src,
                  static_cast<int>(q * g.width + p), MPI_COMM_WORLD, &reqs.back());
      }
    }
    if (t > 0) {
      const long prev_hi = std::min(last, g.width_at(t - 1));
      for (long q = first; q < prev_hi; ++q) {
        const task_bench::task_edges& e = table.at(t - 1, q);
        for (int k = 0; k < e.n_out; ++k) {
          const long c = e.out[static_cast<std::size_t>(k)];
          const int dst = task_bench::owner_of(c, g.width, n);
          if (dst == me) continue;
          reqs.emplace_back();
          MPI_Isend(&prev[idx(q)], sizeof(tag), MPI_BYTE, dst, static_cast<int>(q * g.width + c), MPI_COMM_WORLD,
                    &reqs.back());
        }
      }
    }
    MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
    for (long p = first; p < hi; ++p) {
      const task_bench::task_edges& e = table.at(t, p);
      for (int k = 0; k < e.n_in; ++k) {
        const long q = e.in[static_cast<std::size_t>(k)];
        const tag& got = (q >= first && q < last) ? prev[idx(q)]
                                                  : inbox[idx(p) * task_bench::max_edges + static_cast<std::size_t>(k)];
        if (got.step != t - 1 || got.point != q) ++errors;
      }
      sink += task_bench::compute_bound(iterations);
      cur[idx(p)] = tag{t, p};
    }
    std::swap(prev, cur);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double seconds = bench::seconds_since(t0);
  bench::keep(sink);
  long all_errors = 0;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return {seconds, all_errors};
}

// ---- OpenMP tasks with depend clauses --------------------------------------------------------

#if RILL_BENCH_OPENMP
// One cell per (step, point), so that no step reuses another's storage (Task Bench's OpenMP
// version with as many fields as steps, its fairer configuration): task (t, p) writes cell (t, p)
// and reads the cells of its inputs at t - 1. Up to 5 inputs; unused depend slots name a cell no
// task writes.
measured omp_run(const edge_table& table, long iterations, int threads) {
  const task_bench::graph& g = table.g();
  const long cells_n = g.steps * g.width;
  std::vector<tag> cells(static_cast<std::size_t>(cells_n + 1));
  tag* c = cells.data();
  const long none = cells_n;
  long errors = 0;
  double seconds = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    const auto t0 = bench::clock::now();
    for (long t = 0; t < g.steps; ++t)
      for (long p = 0; p < g.width_at(t); ++p) {
        const task_bench::task_edges& e = table.at(t, p);
        long d[5];
        for (int k = 0; k < 5; ++k) d[k] = k < e.n_in ? (t - 1) * g.width + e.in[static_cast<std::size_t>(k)] : none;
        const long out = t * g.width + p;
#pragma omp task firstprivate(t, p, out) shared(table, errors) depend(in                                             \
                                                                      : c[d[0]], c[d[1]], c[d[2]], c[d[3]], c[d[4]]) \
    depend(out                                                                                                       \
           : c[out])
        {
          const task_bench::task_edges& te = table.at(t, p);
          long bad = 0;
          for (int k = 0; k < te.n_in; ++k) {
            const long q = te.in[static_cast<std::size_t>(k)];
            const tag& got = c[(t - 1) * g.width + q];
            if (got.step != t - 1 || got.point != q) ++bad;
          }
          bench::keep(task_bench::compute_bound(iterations));
          c[out] = tag{t, p};
          if (bad) {
#pragma omp atomic
            errors += bad;
          }
        }
      }
#pragma omp taskwait
    seconds = bench::seconds_since(t0);
  }
  return {seconds, errors};
}

#endif

// ---- MPI inside the Rill runtime -------------------------------------------------------------

// Before a rank's top-level task calls MPI on MPI_COMM_WORLD (the calibration's barrier and sum):
// every rank must be done with Rill messages, since a rank blocked in MPI does not answer Rill
// requests. After the
// barrier phase, the other ranks tell rank 0 that they have their answer (one message each, sent
// at once); rank 0 waits for all of them (answering meanwhile) before it calls MPI.
std::array<std::atomic<int>, task_bench::rill_version::max_ranks> handover_count{};

void mpi_handover(task_bench::rill_version::collective& sync) {
  sync.step({});
  const int n = rill::rank_n();
  if (rill::rank_me() != 0) {
    rill::am::send(0, [] { handover_count[0].fetch_add(1, std::memory_order_release); });
    rill::am::flush();
    return;
  }
  while (handover_count[0].load(std::memory_order_acquire) < n - 1) rill::yield();
  handover_count[0].fetch_sub(n - 1, std::memory_order_relaxed);
}

// The kernel's rate on every rank now, averaged (the MPI peer's processes, and Rill's through calibrate).
double calibrate_mpi(double best_spi) {
  MPI_Barrier(MPI_COMM_WORLD);
  double spi = task_bench::sustained_seconds_per_iteration(best_spi);
  MPI_Allreduce(MPI_IN_PLACE, &spi, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return spi / bench::mpi_peer::world_size();
}

// The kernel's rate on every core now (task_bench/metg.hpp: the peak the efficiency of the next
// sweeps divides by), the same on every rank. Collective, from the ranks' top-level tasks.
double calibrate(bool mpi, int cores, double best_spi, task_bench::rill_version::collective& sync) {
  if (mpi) {
    mpi_handover(sync);
    return calibrate_mpi(best_spi);
  }
  std::vector<double> per(static_cast<std::size_t>(cores));
  std::vector<std::thread> th;
  for (int i = 0; i < cores; ++i)
    th.emplace_back([&per, i, best_spi] {
      per[static_cast<std::size_t>(i)] = task_bench::sustained_seconds_per_iteration(best_spi);
    });
  for (auto& t : th) t.join();
  double spi = 0;
  for (double v : per) spi += v / cores;
  return spi;
}

// ---- the driver ------------------------------------------------------------------------------

struct config {
  long width = 4;
  long steps = 1000;
  long radix = 3;
  int reps = 3;
  int k_start = 12;
  int tries = 2;
  bool flush = true;
  bool run_next = true;
  bool regions = true;
  std::vector<task_bench::pattern> patterns;
};

// METGs (µs) per pattern, one per repetition, and what goes with them.
struct series {
  std::vector<double> metg;
  std::vector<double> smallest;
  std::vector<double> kernel_ns;  // the sustained rate each sweep divided by
  long errors = 0;
  long tasks = 0;
  long edges = 0;
  std::vector<task_bench::sweep_point> last_points;
};

using results = std::map<task_bench::pattern, series>;

template <class Measure>
void record(series& s, const edge_table& table, Measure&& m, double spi, int cores, const config& cfg) {
  const task_bench::metg_result r = task_bench::sweep(m, table.tasks(), spi, cores, cfg.k_start, cfg.tries);
  s.metg.push_back(r.metg_us);
  s.smallest.push_back(r.smallest_passing_us);
  s.kernel_ns.push_back(spi * 1e9);
  s.errors += r.errors;
  s.tasks = table.tasks();
  s.edges = table.edges();
  s.last_points = r.points;
}

void log_sweep(const char* who, task_bench::pattern p, const series& s) {
  std::string pts;
  for (const auto& q : s.last_points)
    pts += fmt::format(" {}:{:.2f}us/{:.0f}%", q.iterations, q.granularity_us, q.efficiency * 100);
  bench::progress("M3 {} {}: METG {:.3g} us (smallest passing {:.3g}), errors {};{}", who, task_bench::name(p),
                  s.metg.back(), s.smallest.back(), s.errors, pts);
}

nlohmann::json sweep_json(const series& s) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& q : s.last_points)
    a.push_back({{"iterations", q.iterations}, {"granularity_us", q.granularity_us}, {"efficiency", q.efficiency}});
  return a;
}

// ---- the MPI peer in processes of its own ----------------------------------------------------

const char* const program = "rill_bench_m3";

// What a peer's results file must have measured to stand beside a Rill run.
nlohmann::json graphs_config(const config& cfg, int ranks) {
  return {{"ranks", ranks}, {"width", cfg.width}, {"steps", cfg.steps}, {"radix", cfg.radix}};
}

// --mpi-peer-only: sweeps every pattern with the MPI peer alone and writes the results (rank 0)
// to `file`, for a later Rill run's --mpi-peer-results. Returns the errors its tasks found.
long run_mpi_peer_only(const config& cfg, const std::map<task_bench::pattern, edge_table>& tables, double spi,
                       int cores, const std::string& file) {
  const bool zero = bench::mpi_peer::world_rank() == 0;
  results peer;
  for (int rep = 0; rep < cfg.reps; ++rep)
    for (auto p : cfg.patterns) {
      const double spi_now = calibrate_mpi(spi);
      if (zero)
        bench::progress("M3 {} rep {}: kernel now {:.3f} ns per iteration per core (best {:.3f})", task_bench::name(p),
                        rep, spi_now * 1e9, spi * 1e9);
      const edge_table& table = tables.at(p);
      record(
          peer[p], table, [&](long it) { return mpi_run(table, it); }, spi_now, cores, cfg);
      if (zero) log_sweep("MPI", p, peer[p]);
    }
  long errors = 0;
  nlohmann::json patterns = nlohmann::json::object();
  for (const auto& [p, s] : peer) {
    errors += s.errors;
    patterns[task_bench::name(p)] = {{"metg", s.metg},        {"smallest", s.smallest}, {"kernel_ns", s.kernel_ns},
                                     {"errors", s.errors},    {"tasks", s.tasks},       {"edges", s.edges},
                                     {"sweep", sweep_json(s)}};
  }
  bench::peer_apart::write(file, program, graphs_config(cfg, cores), patterns);
  return errors;
}

// --mpi-peer-results: the series a --mpi-peer-only run wrote (peer_apart::read's results), for
// the same graphs on as many ranks. Throws std::runtime_error naming what is missing.
results parse_mpi_peer_results(const nlohmann::json& in, const config& cfg) {
  results peer;
  for (auto p : cfg.patterns) {
    const nlohmann::json* j = nullptr;
    if (in.contains(task_bench::name(p))) j = &in[task_bench::name(p)];
    if (j == nullptr) throw std::runtime_error(fmt::format("no results for {}", task_bench::name(p)));
    try {
      series& s = peer[p];
      s.metg = j->at("metg").get<std::vector<double>>();
      s.smallest = j->at("smallest").get<std::vector<double>>();
      s.kernel_ns = j->at("kernel_ns").get<std::vector<double>>();
      s.errors = j->at("errors").get<long>();
      s.tasks = j->at("tasks").get<long>();
      s.edges = j->at("edges").get<long>();
      for (const auto& q : j->at("sweep"))
        s.last_points.push_back({q.at("iterations").get<long>(), 0, q.at("efficiency").get<double>(),
                                 q.at("granularity_us").get<double>(), 0});
      if (s.metg.empty()) throw std::runtime_error("no METG");
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("bad results for {}: {}", task_bench::name(p), e.what()));
    }
  }
  return peer;
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  // The MPI level is chosen before the options are parsed (MPI_Init may rewrite argv).
  if (mpi) bench::peer_apart::init_mpi(argc, argv);
  CLI::App app{"M3: Task Bench METG(50%), Rill vs MPI (2 ranks) / OpenMP tasks (2 threads)"};
  app.allow_extras();  // --rill:* flags are for the runtime
  config cfg;
  bool quick = false;
  bool no_peers = false;
  std::vector<std::string> pattern_names;
  app.add_option("--steps", cfg.steps, "timesteps");
  app.add_option("--width", cfg.width, "points per timestep");
  app.add_option("--radix", cfg.radix, "radix of nearest, spread and random_nearest");
  app.add_option("--reps", cfg.reps, "repetitions of each sweep");
  app.add_option("--k-start", cfg.k_start, "the sweep starts at 2^k iterations per task");
  app.add_option("--tries", cfg.tries, "runs per sweep point (the fastest counts)");
  app.add_option("--patterns", pattern_names, "patterns (default: all eight)");
  app.add_flag("!--no-flush", cfg.flush, "Rill: leave remote outputs to aggregation (no am::flush per task)");
  app.add_flag("!--spawn-all", cfg.run_next, "Rill: spawn every ready task (no running of a ready dependent next)");
  app.add_flag("--no-peers", no_peers, "run only the Rill version (for profiling)");
  app.add_flag("!--no-regions", cfg.regions, "leave out the version on logical regions");
  app.add_flag("--quick", quick, "fewer steps and repetitions");
  bool list_patterns = false;
  app.add_flag("--list-patterns", list_patterns, "print the patterns, one per line, and exit (for bench/run)");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  if (list_patterns) {
    for (auto p : task_bench::all_patterns) fmt::print("{}\n", task_bench::name(p));
    if (mpi) MPI_Finalize();
    return 0;
  }
  bench::peer_apart::require_mpirun(peer_files, mpi, program);
  if (quick) {
    cfg.steps = std::min(cfg.steps, 200L);
    cfg.reps = std::min(cfg.reps, 1);
    cfg.tries = std::min(cfg.tries, 1);
  }
  for (const auto& s : pattern_names) {
    auto p = task_bench::parse_pattern(s);
    if (!p) {
      std::fprintf(stderr, "m3: unknown pattern '%s'\n", s.c_str());
      return 2;
    }
    cfg.patterns.push_back(*p);
  }
  if (cfg.patterns.empty()) cfg.patterns.assign(task_bench::all_patterns.begin(), task_bench::all_patterns.end());

  std::map<task_bench::pattern, edge_table> tables;
  for (auto p : cfg.patterns) tables.emplace(p, edge_table(task_bench::make_graph(p, cfg.width, cfg.steps, cfg.radix)));
  task_bench::regions_version::tables = &tables;

  // Peak: the kernel on every core at once, before the runtime starts its workers.
  double spi = 0;
  int cores = 0;
  if (mpi) {
    cores = bench::mpi_peer::world_size();
    MPI_Barrier(MPI_COMM_WORLD);
    spi = task_bench::seconds_per_iteration();
    MPI_Allreduce(MPI_IN_PLACE, &spi, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    spi /= cores;
  } else {
    cores = bench::peer_apart::rill_workers(argc, argv,
                                            static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    std::vector<double> per(static_cast<std::size_t>(cores));
    std::vector<std::thread> th;
    for (int i = 0; i < cores; ++i)
      th.emplace_back([&per, i] { per[static_cast<std::size_t>(i)] = task_bench::seconds_per_iteration(); });
    for (auto& t : th) t.join();
    for (double v : per) spi += v / cores;
  }

  if (!peer_files.only.empty()) {
    const long errors = run_mpi_peer_only(cfg, tables, spi, cores, peer_files.only);
    if (errors != 0) std::fprintf(stderr, "m3: the MPI peer's tasks found %ld wrong inputs\n", errors);
    MPI_Finalize();
    return errors == 0 ? 0 : 1;
  }

  results peer, rill_res, regions_res;
  if (!peer_files.results.empty()) {
    peer = bench::peer_apart::read_or_exit(peer_files.results, program, graphs_config(cfg, cores),
                                           [&](const nlohmann::json& in) { return parse_mpi_peer_results(in, cfg); });
  } else if (mpi && !no_peers) {
    bench::peer_apart::note_no_peer("M3");
  }
  std::string peer_name;
  int ranks = 0, workers = 0;
  {
    rill::runtime rt(argc, argv);
    ranks = rt.ranks();
    workers = rt.options().workers;
    if (mpi ? workers != 1 : cores != ranks * workers) {
      std::fprintf(stderr,
                   "m3: pass --rill:workers=1 under mpirun, and --rill:ranks=1 --rill:workers=N on one process\n");
      return 2;
    }
    if (!mpi || bench::mpi_peer::world_rank() == 0)
      bench::progress("M3 peak: {:.3f} ns per kernel iteration per core, {} cores ({:.3g} GFLOP/s)", spi * 1e9, cores,
                      cores * task_bench::flops_per_iteration / spi * 1e-9);
    const bool run_peer = !no_peers && !mpi && RILL_BENCH_OPENMP;  // the MPI peer ran apart
    peer_name = mpi ? fmt::format(
                          "MPI Isend/Irecv per edge (mpi/nonblock), {} ranks at MPI_THREAD_SINGLE, "
                          "processes of their own",
                          cores)
                    : fmt::format("OpenMP tasks with depend, {} threads", cores);
    rt.run_spmd([&] {
      task_bench::rill_version::collective sync;
      const bool zero = rill::rank_me() == 0;
      std::uint64_t epoch = 0;
      std::map<task_bench::pattern, task_bench::regions_version::graph_regions> graphs;  // rank 0's
      for (int rep = 0; rep < cfg.reps; ++rep)
        for (auto p : cfg.patterns) {
          const edge_table& table = tables.at(p);
          const double spi_now = calibrate(mpi, cores, spi, sync);
          if (zero)
            bench::progress("M3 {} rep {}: kernel now {:.3f} ns per iteration per core (best {:.3f})",
                            task_bench::name(p), rep, spi_now * 1e9, spi * 1e9);
          series local_rill, local_peer;
          series& s = zero ? rill_res[p] : local_rill;
          auto rill_sweep = [&] {
            record(
                s, table,
                [&](long it) {
                  const auto r = task_bench::rill_version::run_graph(table, it, sync, ++epoch, cfg.flush, cfg.run_next);
                  return measured{r.seconds, r.errors};
                },
                spi_now, cores, cfg);
            if (zero) log_sweep("Rill", p, s);
          };
          auto peer_sweep = [&] {
            if (!run_peer) return;
            series& ps = zero ? peer[p] : local_peer;
            record(
                ps, table,
                [&](long it) {
#if RILL_BENCH_OPENMP
                  return omp_run(table, it, cores);
#else
                  (void)it;
                  return measured{};
#endif
                },
                spi_now, cores, cfg);
            if (zero) log_sweep("OpenMP", p, ps);
          };
          // On regions: rank 0 issues every launch, the other ranks run what they are sent.
          auto regions_sweep = [&] {
            if (!cfg.regions) return;
            if (zero && !graphs.count(p)) graphs.emplace(p, task_bench::regions_version::make_regions(table));
            series local_regions;
            series& rs = zero ? regions_res[p] : local_regions;
            record(
                rs, table,
                [&](long it) {
                  task_bench::rill_version::result r;
                  if (zero) r = task_bench::regions_version::run_graph(graphs.at(p), p, it);
                  const task_bench::rill_version::agreed all = sync.step({r.seconds, r.errors});
                  return measured{all.seconds, all.errors};
                },
                spi_now, cores, cfg);
            if (zero) log_sweep("regions", p, rs);
          };
          if (rep % 2 == 0) {
            peer_sweep();
            rill_sweep();
          } else {
            rill_sweep();
            peer_sweep();
          }
          regions_sweep();
        }
    });
  }

  long all_errors = 0;
  if (!mpi || bench::mpi_peer::world_rank() == 0) {
    for (auto p : cfg.patterns) {
      const series& r = rill_res[p];
      bench::result res;
      res.id = "M3";
      res.case_name = fmt::format("{}, {} {}, {} {}, {}", task_bench::name(p), ranks, ranks == 1 ? "rank" : "ranks",
                                  workers, workers == 1 ? "worker" : "workers", mpi ? "mpi" : "local");
      res.metric = "METG(50%)";
      res.unit = "us";
      res.higher_is_better = false;
      res.rill = r.metg;
      if (peer.count(p)) {
        res.peer = peer_name;
        res.peer_values = peer.at(p).metg;
      }
      const long errors = r.errors + (peer.count(p) ? peer.at(p).errors : 0);
      res.extra = {{"ranks", ranks},
                   {"workers", workers},
                   {"transport", mpi ? "mpi" : "local"},
                   {"pattern", task_bench::name(p)},
                   {"width", cfg.width},
                   {"steps", cfg.steps},
                   {"radix", cfg.radix},
                   {"tasks", r.tasks},
                   {"dependencies", r.edges},
                   {"cores", cores},
                   {"peak_gflops", cores * task_bench::flops_per_iteration / spi * 1e-9},
                   {"metg_method", "interpolated as task-bench chart_metg.py"},
                   {"smallest_passing_us", bench::summarize(r.smallest).median},
                   {"kernel_ns_per_iteration", bench::summarize(r.kernel_ns).median},
                   {"not_found_runs", std::count(r.metg.begin(), r.metg.end(), 0.0)},
                   {"errors", errors},
                   {"sweep", sweep_json(r)}};
      if (peer.count(p)) {
        res.extra["peer_smallest_passing_us"] = bench::summarize(peer.at(p).smallest).median;
        res.extra["peer_kernel_ns_per_iteration"] = bench::summarize(peer.at(p).kernel_ns).median;
        res.extra["peer_sweep"] = sweep_json(peer.at(p));
      }
      all_errors += errors;
      bench::emit(res);
      if (!regions_res.count(p)) continue;
      // The same graph as launches on logical regions, beside the SPMD version above.
      const series& g = regions_res.at(p);
      bench::result on_regions = res;
      on_regions.case_name =
          fmt::format("{}, regions, {} {}, {} {}, {}", task_bench::name(p), ranks, ranks == 1 ? "rank" : "ranks",
                      workers, workers == 1 ? "worker" : "workers", mpi ? "mpi" : "local");
      on_regions.rill = g.metg;
      on_regions.peer = "Rill SPMD (active messages)";
      on_regions.peer_values = r.metg;
      on_regions.extra["errors"] = g.errors;
      all_errors += g.errors;
      on_regions.extra["smallest_passing_us"] = bench::summarize(g.smallest).median;
      on_regions.extra["not_found_runs"] = std::count(g.metg.begin(), g.metg.end(), 0.0);
      on_regions.extra["sweep"] = sweep_json(g);
      on_regions.extra["peer_smallest_passing_us"] = bench::summarize(r.smallest).median;
      on_regions.extra["peer_sweep"] = sweep_json(r);
      on_regions.extra["version"] = "regions: rank 0 launches every task with region requirements";
      bench::emit(on_regions);
    }
  }
  if (all_errors != 0) std::fprintf(stderr, "m3: tasks found %ld wrong inputs\n", all_errors);
  if (mpi) MPI_Finalize();
  return all_errors == 0 ? 0 : 1;
}
