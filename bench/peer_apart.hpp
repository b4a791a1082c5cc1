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
#include <utility>
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

// The flags; --mpi-peer-turns only for a benchmark that takes turns.
inline void add_options(CLI::App& app, files& f, bool with_turns = false) {
  app.add_option("--mpi-peer-only", f.only,
                 "under mpirun: run only the MPI peer, at MPI_THREAD_SINGLE, and write its results to this file");
  app.add_option("--mpi-peer-results", f.results,
                 "under mpirun: the file a --mpi-peer-only run of the same configuration wrote; its figures go "
                 "beside Rill's");
  if (with_turns)
    app.add_option("--mpi-peer-turns", f.turns,
                   "with either of the above, for runs started together: take turns with the other run, "
                   "repetition by repetition, through files in this (empty) directory");
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
  f.close();
  if (!f) {
    std::fprintf(stderr, "%.*s: cannot write the MPI peer's results to '%s'\n", static_cast<int>(bench.size()),
                 bench.data(), file.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// Where `in` differs from `config` (every key of `config` must be in `in`, equal), or "".
inline std::string mismatch(const nlohmann::json& in, const nlohmann::json& config) {
  for (auto it = config.begin(); it != config.end(); ++it)
    if (!in.contains(it.key()) || in[it.key()] != it.value())
      return fmt::format("has {} = {}, this run {}", it.key(), in.contains(it.key()) ? in[it.key()].dump() : "nothing",
                         it.value().dump());
  return "";
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
  if (const std::string why = mismatch(in, config); !why.empty()) throw std::runtime_error(why);
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
// follows the other. Files in the shared directory say what has happened; every rank waits for
// the file itself, asleep on an inotify watch, so that the side that measures has the cores:
//   peer.config, rill.config  each side's configuration, written once it is set up and checked
//                             by the other before any turn (a mismatch stops both at once);
//   turn.<k>                  turn k has ended (made by the side's rank 0 after a barrier);
//   results.ready             the peer's results file is complete (after the last turn, so that
//                             the peer's teardown does not fall into Rill's turn either).
// Without a directory each side runs its repetitions at once.
class turns {
 public:
  enum class side { peer, rill };

  // `who` names this side in its errors.
  turns(std::string dir, std::string who, int reps) : dir_(std::move(dir)), who_(std::move(who)), reps_(reps) {}

  // Runs repetition(r) for r = 0 .. reps - 1, each in this side's turn, after checking that the
  // other side runs the same `config`.
  template <class F>
  void take(side s, const nlohmann::json& config, F&& repetition) const {
    meet(s, config);
    for (int r = 0; r < reps_; ++r) {
      const int k = 2 * r + ((s == side::peer) == (r % 2 == 0) ? 0 : 1);
      if (k > 0) wait_for(turn(k - 1));
      repetition(r);
      end(turn(k));
    }
  }

  // The peer's side, before it writes anything for Rill: waits for Rill's last turn to end.
  void before_results() const {
    if (reps_ > 0) wait_for(turn(2 * reps_ - 1));
  }
  // The peer's side: after Rill's last turn, writes its results file (peer_apart::write) and says
  // the file is complete.
  void hand_over(const std::string& file, std::string_view bench, const nlohmann::json& config,
                 const nlohmann::json& results) const {
    before_results();
    write(file, bench, config, results);
    end("results.ready");
  }
  // Rill's side: waits until the peer's results file is complete, then read_or_exit()s it.
  template <class Extract>
  auto collect(const std::string& file, std::string_view bench, const nlohmann::json& config, Extract&& extract) const {
    wait_for("results.ready");
    return read_or_exit(file, bench, config, std::forward<Extract>(extract));
  }

 private:
  static std::string turn(int k) { return "turn." + std::to_string(k); }

  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s: --mpi-peer-turns: '%s': %s\n", who_.c_str(), dir_.c_str(), why.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::abort();
  }

  // Publishes this side's configuration and checks the other's. The directory must hold nothing
  // but the other side's configuration (no turn of either side can have ended yet): a run's
  // leftovers would let both sides measure at once, or Rill read an old run's results.
  void meet(side s, const nlohmann::json& config) const {
    if (dir_.empty()) return;
    const bool peer = s == side::peer;
    const std::string mine = peer ? "peer.config" : "rill.config";
    const std::string theirs = peer ? "rill.config" : "peer.config";
    if (mpi_peer::world_rank() == 0) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(dir_, ec))
        if (const std::string n = e.path().filename(); !n.starts_with(theirs))
          fail("holds " + n + " (leftovers of another run?): it must be empty");
      if (ec) fail(ec.message());
      const std::string path = dir_ + "/" + mine;
      std::ofstream(path + ".part") << config.dump() << "\n";
      std::filesystem::rename(path + ".part", path, ec);  // seen whole or not at all
      if (ec) fail("cannot write " + mine + ": " + ec.message());
    }
    wait_for(theirs);
    nlohmann::json other;
    try {
      std::ifstream(dir_ + "/" + theirs) >> other;
    } catch (const nlohmann::json::exception& e) {
      fail(theirs + " is not JSON: " + e.what());
    }
    if (const std::string why = mismatch(other, config); !why.empty())
      fail(fmt::format("the {} run {}", peer ? "Rill" : "peer", why));
  }

  void end(const std::string& name) const {
    if (dir_.empty()) return;
    mpi_peer::sleeping_barrier();
    if (mpi_peer::world_rank() == 0) std::ofstream(dir_ + "/" + name).put('\n');
  }

  // Waits until the file `name` exists; gives up after two minutes (the other run failed). The
  // watch is set up before the first look, so a file made in between is seen. A side that woke up
  // to look (even every 200 us) would take the cores from the side that measures: MPI_Accumulate's
  // passive target lost a third of its rate to that.
  void wait_for(const std::string& name) const {
    if (dir_.empty()) return;
    const int watch = inotify_init1(IN_CLOEXEC);
    if (watch < 0 || inotify_add_watch(watch, dir_.c_str(), IN_CREATE | IN_MOVED_TO) < 0) fail("cannot watch it");
    const auto limit = std::chrono::seconds(120);
    const auto deadline = clock::now() + limit;
    while (!std::filesystem::exists(dir_ + "/" + name)) {
      if (clock::now() > deadline)
        fail(fmt::format("{} did not appear within {} s (the other run failed?)", name, limit.count()));
      pollfd p{watch, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0) {
        char events[4096];
        [[maybe_unused]] const ssize_t n = ::read(watch, events, sizeof events);
      }
    }
    close(watch);
  }

  std::string dir_;
  std::string who_;
  int reps_;
};

}  // namespace bench::peer_apart
