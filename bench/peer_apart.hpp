// An MPI peer in processes of its own. Rill's processes must initialise MPI at
// MPI_THREAD_SERIALIZED, and Open MPI 4.1 charges every call for any level above
// MPI_THREAD_SINGLE (mpi_peer.hpp has the figures), so a peer that shares Rill's processes is
// weaker than the plain MPI program it stands for. A benchmark that takes these flags runs twice
// under mpirun, seconds apart (bench/run does both):
//   --mpi-peer-only F     MPI_Init (SINGLE), only the MPI peer, its figures written to F (rank 0);
//   --mpi-peer-results F  the Rill run, which reports F's figures as its peer's.
// F names the benchmark and the configuration it measured; a Rill run of another configuration
// refuses it with the reason (exit 2), as it refuses a missing or corrupt file.
//
// Where the machine drifts within seconds (memory bandwidth, M4 and COPY), the two runs go at the
// same time and take turns repetition by repetition (`turns`, --mpi-peer-turns DIR): each side
// sleeps while the other measures.
#pragma once

#include <fmt/format.h>
#include <mpi.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "mpi_peer.hpp"

namespace bench::peer_apart {

struct files {
  std::string only;     // --mpi-peer-only
  std::string results;  // --mpi-peer-results
  std::string turns;    // --mpi-peer-turns: a directory both runs share
};

// Whether argv asks for --mpi-peer-only: decided before MPI_Init, which may rewrite argv.
inline bool peer_only_requested(int argc, char** argv) {
  return std::any_of(argv + 1, argv + argc,
                     [](const char* a) { return std::string_view(a).starts_with("--mpi-peer-only"); });
}

// Initialises MPI at the level the run needs: SINGLE for the peer alone, SERIALIZED for Rill.
inline void init_mpi(int& argc, char**& argv) {
  if (peer_only_requested(argc, argv))
    mpi_peer::init_single(argc, argv);
  else
    mpi_peer::init(argc, argv);
}

// The --rill:workers=N of argv (the runtime's flag, which a peer's run never parses), or
// `fallback`: a peer that runs as many tasks as Rill has workers reads it here.
inline int rill_workers(int argc, char** argv, int fallback) {
  constexpr std::string_view flag = "--rill:workers=";
  int workers = fallback;
  for (int i = 1; i < argc; ++i)
    if (std::string_view a = argv[i]; a.starts_with(flag)) workers = std::atoi(a.data() + flag.size());
  return workers > 0 ? workers : fallback;
}

inline void add_options(CLI::App& app, files& f) {
  app.add_option("--mpi-peer-only", f.only,
                 "under mpirun: run only the MPI peer, at MPI_THREAD_SINGLE, and write its results to this file");
  app.add_option("--mpi-peer-results", f.results,
                 "under mpirun: the file a --mpi-peer-only run of the same configuration wrote; its figures go "
                 "beside Rill's");
  app.add_option("--mpi-peer-turns", f.turns,
                 "with either of the above, for runs started together: take turns with the other run, "
                 "repetition by repetition, through files in this directory");
}

// Exits 2 when the flags were given to a run that mpirun did not launch.
inline void require_mpirun(const files& f, bool launched_by_mpirun, std::string_view bench) {
  if (launched_by_mpirun || (f.only.empty() && f.results.empty())) return;
  std::fprintf(stderr, "%.*s: --mpi-peer-only and --mpi-peer-results are for runs under mpirun\n",
               static_cast<int>(bench.size()), bench.data());
  std::exit(2);
}

inline std::string kind(std::string_view bench) { return fmt::format("{} MPI peer results", bench); }

// Rank 0 writes {"kind", "thread_level", each key of `config`, "results"} to `file`; aborts the
// job when it cannot.
inline void write(const std::string& file, std::string_view bench, const nlohmann::json& config,
                  const nlohmann::json& results) {
  if (mpi_peer::world_rank() != 0) return;
  nlohmann::json out = config;
  out["kind"] = kind(bench);
  out["thread_level"] = "MPI_THREAD_SINGLE";
  out["results"] = results;
  std::ofstream f(file);
  f << out.dump() << "\n";
  if (!f) {
    std::fprintf(stderr, "%.*s: cannot write the MPI peer's results to '%s'\n", static_cast<int>(bench.size()),
                 bench.data(), file.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// The "results" of `file`, after checking that `bench` wrote it for `config` (every key equal).
// Throws std::runtime_error naming what is wrong.
inline nlohmann::json read(const std::string& file, std::string_view bench, const nlohmann::json& config) {
  std::ifstream f(file);
  if (!f) throw std::runtime_error("cannot open it");
  nlohmann::json in;
  try {
    f >> in;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("not JSON: {}", e.what()));
  }
  if (!in.is_object() || in.value("kind", "") != kind(bench))
    throw std::runtime_error(fmt::format("not what {} --mpi-peer-only writes", bench));
  for (auto it = config.begin(); it != config.end(); ++it)
    if (!in.contains(it.key()) || in[it.key()] != it.value())
      throw std::runtime_error(fmt::format("has {} = {}, this run {}", it.key(),
                                           in.contains(it.key()) ? in[it.key()].dump() : "nothing", it.value().dump()));
  if (!in.contains("results")) throw std::runtime_error("it has no results");
  return in["results"];
}

// extract(read(...)), or on any error (of the file, or of what `extract` finds in it) a message
// "<bench>: --mpi-peer-results: <why>" and exit 2: every rank reads the file, so every rank exits.
template <class Extract>
auto read_or_exit(const std::string& file, std::string_view bench, const nlohmann::json& config, Extract&& extract) {
  try {
    return extract(read(file, bench, config));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%.*s: --mpi-peer-results: '%s': %s\n", static_cast<int>(bench.size()), bench.data(),
                 file.c_str(), e.what());
    MPI_Finalize();
    std::exit(2);
  }
}

// One series of peer values (one per repetition) from read()'s results; throws when absent.
inline std::vector<double> series(const nlohmann::json& results, const std::string& key) {
  if (!results.contains(key) || !results[key].is_array() || results[key].empty())
    throw std::runtime_error(fmt::format("no results for '{}'", key));
  return results[key].get<std::vector<double>>();
}

// The note a Rill run under mpirun prints when it was given no peer results.
inline void note_no_peer(std::string_view id) {
  if (mpi_peer::world_rank() == 0)
    progress(
        "{}: no MPI peer in this run (its processes run apart, at MPI_THREAD_SINGLE: --mpi-peer-only FILE "
        "first, then --mpi-peer-results FILE; bench/run {} does both)",
        id, id);
}

// Turns between a peer's run and Rill's, started together on the same cores, repetition by
// repetition: the peer goes first in even repetitions and Rill in odd ones, so that neither always
// follows the other. Turn k may begin once turn k - 1 has ended; a run's rank 0 ends a turn by
// creating DIR/turn.<k> after a barrier of its ranks, and the other side's ranks sleep until it
// appears, so that the side that measures has the cores. Without a directory each side runs its
// repetitions at once.
class turns {
 public:
  enum class side { peer, rill };

  // `who` names this side in the error a stalled wait ends with.
  turns(std::string dir, std::string who, int reps) : dir_(std::move(dir)), who_(std::move(who)), reps_(reps) {}

  // Runs repetition(r) for r = 0 .. reps - 1, each in this side's turn.
  template <class F>
  void take(side s, F&& repetition) const {
    for (int r = 0; r < reps_; ++r) {
      const int k = 2 * r + ((s == side::peer) == (r % 2 == 0) ? 0 : 1);
      if (k > 0) wait_ended(k - 1);
      repetition(r);
      end(k);
    }
  }

  // The peer's side, once it has written its results file: says the file is complete.
  void results_written() const { end(2 * reps_); }
  // Rill's side: waits until the peer's results file is complete.
  void wait_for_results() const { wait_ended(2 * reps_); }

 private:
  void end(int k) const {
    if (dir_.empty()) return;
    mpi_peer::sleeping_barrier();
    if (mpi_peer::world_rank() == 0) std::ofstream(marker(k)).put('\n');
  }

  // Waits until turn k has ended; aborts the job after two minutes (the other run failed). Every
  // rank waits for the marker itself, blocked on an inotify watch of the directory: a side that
  // woke up to look (even every 200 us) would take the cores from the side that measures, and
  // MPI_Accumulate's passive target lost a third of its rate to that.
  void wait_ended(int k) const {
    if (dir_.empty()) return;
    const int watch = inotify_init1(IN_CLOEXEC);
    if (watch < 0 || inotify_add_watch(watch, dir_.c_str(), IN_CREATE | IN_MOVED_TO) < 0) {
      std::fprintf(stderr, "%s: --mpi-peer-turns: cannot watch '%s'\n", who_.c_str(), dir_.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const auto limit = std::chrono::seconds(120);
    const auto deadline = clock::now() + limit;
    // Looked for after the watch exists, so that a marker made in between is seen.
    while (!std::filesystem::exists(marker(k))) {
      if (clock::now() > deadline) {
        std::fprintf(stderr,
                     "%s: --mpi-peer-turns: turn %d did not end within %lld s in '%s' (the other run failed?)\n",
                     who_.c_str(), k, static_cast<long long>(limit.count()), dir_.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      pollfd p{watch, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0) {
        char events[4096];
        [[maybe_unused]] const ssize_t n = ::read(watch, events, sizeof events);
      }
    }
    close(watch);
  }

  std::string marker(int k) const { return dir_ + "/turn." + std::to_string(k); }

  std::string dir_;
  std::string who_;
  int reps_;
};

}  // namespace bench::peer_apart
