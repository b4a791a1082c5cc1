// R3 — reservation grant rate (Realm §8.2, Fig. 5b/5c): every rank creates R reservations whose
// handles all ranks get; every rank then builds C chains of D acquire→release pairs, each acquire
// on a random reservation (of any rank) and dependent on the previous grant of its chain, the
// release deferred on that grant (Realm's lock_chains). All chains start together when one event
// triggers; grants/s = all acquires / time until every chain has ended.
//
//   rill_bench_r3 --rill:ranks=1 --rill:workers=1     1 rank, local
//   mpirun -np 2 rill_bench_r3 --rill:workers=1       2 ranks, mpi
//
// Cases: "16 reservations/rank, 64 chains/rank" (Realm's configuration; Realm measured 1.26 M
// grants/s on one rank on this machine kind, shared/anchors.md, printed as `reference`), and
// "contended": one reservation for all chains of all ranks.
//
// Peer, in processes of its own at MPI_THREAD_SINGLE (peer_apart.hpp; a singleton on one rank;
// bench/run R3 runs both): the same pattern with MPI one-sided locks, one window per reservation index; a grant is
// MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner rank) + MPI_Accumulate of 1 into the reservation's counter + MPI_Win_unlock.
// MPI locks block, so the peer runs one chain per rank (its requests cannot be pipelined); the counters are checked
// afterwards (`peer_errors`).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

struct params {
  int per_rank = 16;  // reservations per rank (0: contended, one in total)
  int chains = 64;
  int depth = 1024;
};

std::uint64_t next_random(std::uint64_t& x) {
  x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x >> 33;
}

// On every rank: the chains, waiting for `start`; `done` (a user event of rank 0) triggers when
// they have all ended.
void build_chains(std::vector<rill::reservation> all, rill::event start, rill::user_event done, int chains, int depth) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rill::rank_me() + 1);
  std::vector<rill::event> ends;
  ends.reserve(static_cast<std::size_t>(chains));
  for (int c = 0; c < chains; ++c) {
    rill::event prev = start;
    for (int i = 0; i < depth; ++i) {
      const rill::reservation& r = all[next_random(x) % all.size()];
      prev = r.acquire(prev);
      r.release(prev);
    }
    ends.push_back(prev);
  }
  done.trigger(rill::merge(ends));
}

// Rank 0: one repetition; returns grants per second.
double rill_repetition(const std::vector<rill::reservation>& all, const params& p) {
  const int n = rill::rank_n();
  const rill::user_event start = rill::user_event::create();
  std::vector<rill::event> built, done;
  for (int r = 0; r < n; ++r) {
    const rill::user_event d = rill::user_event::create();
    done.push_back(d);
    built.push_back(rill::proc(r).spawn(build_chains, all, rill::event(start), d, p.chains, p.depth));
  }
  rill::merge(built).wait();
  const auto t0 = bench::clock::now();
  start.trigger();
  rill::merge(done).wait();
  const double t = bench::seconds_since(t0);
  return static_cast<double>(n) * p.chains * p.depth / t;
}

// Rank 0: the reservations of every rank (per_rank each, or one of rank 0 when contended).
std::vector<rill::reservation> create_everywhere(int per_rank) {
  const int n = rill::rank_n();
  if (per_rank == 0) return {rill::reservation::create()};
  std::vector<rill::reservation> all(static_cast<std::size_t>(n * per_rank));
  rill::latch got(n * per_rank);
  for (int i = 0; i < n * per_rank; ++i) {
    rill::am::send(
        i % n,
        [](rill::reservation* slot, rill::latch* d) {
          rill::am::send(
              rill::am::sender(),
              [](rill::reservation* s, rill::latch* dd, rill::reservation r) {
                *s = r;
                dd->count_down();
              },
              slot, d, rill::reservation::create());
        },
        &all[static_cast<std::size_t>(i)], &got);
  }
  got.wait();
  return all;
}

// The MPI peer: one chain per rank of `grants` exclusive lock epochs on random (window, rank)
// pairs. Returns grants per second over all ranks (on rank 0) and adds counting errors to `errors`.
double mpi_lock_chain(int per_rank, long grants, long& errors) {
  const int me = bench::mpi_peer::world_rank();
  const int n = bench::mpi_peer::world_size();
  const int windows = per_rank == 0 ? 1 : per_rank;
  const int owners = per_rank == 0 ? 1 : n;
  std::vector<MPI_Win> win(static_cast<std::size_t>(windows));
  std::vector<std::int64_t*> base(static_cast<std::size_t>(windows));
  for (int w = 0; w < windows; ++w) {
    MPI_Win_allocate(sizeof(std::int64_t), sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &base[static_cast<std::size_t>(w)], &win[static_cast<std::size_t>(w)]);
    *base[static_cast<std::size_t>(w)] = 0;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(me + 1);
  const std::int64_t one = 1;
  const auto t0 = bench::clock::now();
  for (long i = 0; i < grants; ++i) {
    const std::uint64_t k = next_random(x) % static_cast<std::uint64_t>(windows * owners);
    const int w = static_cast<int>(k % static_cast<std::uint64_t>(windows));
    const int target = static_cast<int>(k / static_cast<std::uint64_t>(windows));
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win[static_cast<std::size_t>(w)]);
    MPI_Accumulate(&one, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, MPI_SUM, win[static_cast<std::size_t>(w)]);
    MPI_Win_unlock(target, win[static_cast<std::size_t>(w)]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t = bench::seconds_since(t0);
  std::int64_t mine = 0, total = 0;
  for (int w = 0; w < windows; ++w) {
    MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win[static_cast<std::size_t>(w)]);
    mine += *base[static_cast<std::size_t>(w)];
    MPI_Win_unlock(me, win[static_cast<std::size_t>(w)]);
  }
  MPI_Reduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0 && total != static_cast<std::int64_t>(grants) * n) errors += 1;
  for (auto& w : win) MPI_Win_free(&w);
  return me == 0 ? static_cast<double>(grants) * n / t : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // MPI also on one rank (a singleton), as the peer runs under mpirun. A singleton sets the launcher's variables,
  // so the choice of transport is made before, and passed to the runtime explicitly.
  const bool mpi = rill::launched_by_mpi_launcher();
  bench::peer_apart::init_mpi(argc, argv);
  std::vector<char*> rill_argv(argv, argv + argc);
  char local_flag[] = "--rill:transport=local";
  if (!mpi) rill_argv.push_back(local_flag);
  rill_argv.push_back(nullptr);
  const int me = bench::mpi_peer::world_rank();

  CLI::App app{"R3: reservation grant rate, Rill vs MPI_Win_lock exclusive"};
  app.allow_extras();  // --rill:* flags are for the runtime
  int reps = 7;
  params p;
  long peer_grants = 200'000;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--depth", p.depth, "acquire→release pairs per chain");
  app.add_option("--chains", p.chains, "chains per rank");
  app.add_option("--reservations", p.per_rank, "reservations per rank");
  app.add_option("--peer-grants", peer_grants, "lock epochs per rank and repetition of the MPI peer");
  app.add_flag("--quick", quick, "small sizes");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 5);
    p.depth = std::min(p.depth, 256);
    peer_grants = std::min(peer_grants, 50'000L);
  }
  const int ranks = bench::mpi_peer::world_size();
  const std::vector<int> variants = {p.per_rank, 0};  // 0: contended

  // The peer runs apart (peer_apart.hpp), at MPI_THREAD_SINGLE, under mpirun or as a singleton.
  std::vector<std::vector<double>> peer(variants.size());
  std::vector<long> peer_errors(variants.size(), 0);
  const char* const program = "rill_bench_r3";
  const nlohmann::json peer_config = {
      {"ranks", ranks}, {"reservations_per_rank", p.per_rank}, {"peer_grants", peer_grants}, {"reps", reps}};
  if (!peer_files.only.empty()) {
    for (std::size_t v = 0; v < variants.size(); ++v) {
      mpi_lock_chain(variants[v], peer_grants / 10, peer_errors[v]);
      for (int r = 0; r < reps; ++r) {
        peer[v].push_back(mpi_lock_chain(variants[v], peer_grants, peer_errors[v]));
        if (me == 0) bench::progress("R3 mpi  variant {} rep {}: {:.3g} grants/s", v, r, peer[v].back());
      }
    }
    bench::peer_apart::write(peer_files.only, program, peer_config,
                             {{"grants_per_second", peer}, {"errors", peer_errors}});
    MPI_Finalize();
    return 0;
  }
  if (!peer_files.results.empty()) {
    std::tie(peer, peer_errors) =
        bench::peer_apart::read_or_exit(peer_files.results, program, peer_config, [&](const nlohmann::json& in) {
          auto rates = in.at("grants_per_second").get<std::vector<std::vector<double>>>();
          auto errors = in.at("errors").get<std::vector<long>>();
          if (rates.size() != variants.size() || errors.size() != variants.size())
            throw std::runtime_error("not one series per variant");
          return std::pair{rates, errors};
        });
  } else {
    bench::peer_apart::note_no_peer("R3");
  }

  std::vector<std::vector<double>> rill_rates(variants.size());
  int workers = 0;
  {
    int rill_argc = static_cast<int>(rill_argv.size()) - 1;
    rill::runtime rt(rill_argc, rill_argv.data());
    workers = rt.options().workers;
    rt.run([&] {
      for (std::size_t v = 0; v < variants.size(); ++v) {
        const auto all = create_everywhere(variants[v]);
        params warm = p;
        warm.depth = std::max(1, p.depth / 10);
        rill_repetition(all, warm);
        for (int r = 0; r < reps; ++r) {
          rill_rates[v].push_back(rill_repetition(all, p));
          bench::progress("R3 rill variant {} rep {}: {:.3g} grants/s", v, r, rill_rates[v].back());
        }
      }
    });
  }

  if (me == 0) {
    const std::string where = ranks == 1 ? "1 rank " + std::string(mpi ? "mpi" : "local") : "2 ranks mpi";
    for (std::size_t v = 0; v < variants.size(); ++v) {
      bench::result r;
      r.id = "R3";
      r.case_name = variants[v] == 0
                        ? fmt::format("contended: 1 reservation, {} chains/rank, {}", p.chains, where)
                        : fmt::format("{} reservations/rank, {} chains/rank, {}", variants[v], p.chains, where);
      if (ranks > 2) r.case_name = fmt::format("{} ({} ranks)", r.case_name, ranks);
      r.metric = "grant rate";
      r.unit = "grants/s";
      r.higher_is_better = true;
      r.rill = rill_rates[v];
      r.peer = "MPI_Win_lock exclusive + MPI_Accumulate, 1 chain/rank, processes of its own at MPI_THREAD_SINGLE";
      r.peer_values = peer[v];
      r.extra = {{"ranks", ranks},
                 {"workers", workers},
                 {"transport", mpi ? "mpi" : "local"},
                 {"depth", p.depth},
                 {"chains", p.chains},
                 {"reservations_per_rank", variants[v]},
                 {"peer_errors", peer_errors[v]}};
      if (variants[v] == 16 && p.chains == 64 && ranks == 1) r.extra["reference"] = "Realm lock_chains 1.26e6 grants/s";
      bench::emit(r);
    }
  }
  MPI_Finalize();
  return 0;
}
