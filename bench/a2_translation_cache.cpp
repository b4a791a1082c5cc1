// A2 (HPX-5 Fig. 5-6): GUPS through a bounded translation cache.
//
// The table is 2^14 relocatable blocks of 256 bytes (dist::cyclic), and every block is first moved
// away from its home, so a rank reaches a block directly only if its translation cache remembers
// where the block went; otherwise the operation goes to the home, which forwards it (two hops).
// Then every rank adds pseudo-random values to the words their low bits name (rill::gas::call_ff)
// under each cache configuration in turn -- unbounded, then LRU and random with 1K, 4K, 16K and
// 64K entries -- and the run reports the update rate with the cache's hits, misses and evictions
// (summed over ranks), as the paper's Fig. 6 does for rank 0. Needs 3 ranks or more: with two,
// a block is always either here or at the other rank, and no cache is needed.
//
// Peer in the same run: the unbounded cache (the paper's baseline), measured in every repetition.
// `errors` counts words that differ from a sequential model of all the adds.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "gups_stream.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

constexpr std::uint64_t block_bytes = 256, blocks = 1 << 14;
constexpr std::uint64_t words = blocks * block_bytes / 8;

void add(std::uint64_t& w, std::uint64_t v) { w += v; }

struct config {
  rill::gas_cache_policy policy;
  std::size_t entries;
  std::string name() const {
    return policy == rill::gas_cache_policy::unbounded
               ? std::string("unbounded")
               : fmt::format("{} {}K", policy == rill::gas_cache_policy::lru ? "lru" : "random", entries / 1024);
  }
};

// One timed pass of `updates` adds per rank under the calling rank's current cache; seconds.
double pass(rill::gaddr table, std::uint64_t updates) {
  const auto world = rill::team::world();
  world.barrier().wait();
  const auto t0 = bench::clock::now();
  {
    std::uint64_t state = bench::gups_start(rill::rank_me());
    rill::completion_counter done;
    bench::gups_updates(state, updates, words, [&](std::uint64_t i, std::uint64_t v) {
      rill::gas::call_ff<std::uint64_t>(done, table + static_cast<std::int64_t>(i * 8), &add, v);
    });
    done.wait();
  }
  world.barrier().wait();
  return bench::seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::mpi_peer::init(argc, argv);
  CLI::App app{"A2: GUPS through an unbounded, LRU or random translation cache of 1K-64K entries"};
  app.allow_extras();
  bench::gups_options opt;
  opt.add_to(app);
  CLI11_PARSE(app, argc, argv);
  const std::uint64_t updates = opt.finish_parsing();
  const int reps = opt.reps, log_updates = opt.log_updates;
  std::vector<config> configs{{rill::gas_cache_policy::unbounded, 0}};
  for (auto p : {rill::gas_cache_policy::lru, rill::gas_cache_policy::random})
    for (std::size_t k : {1, 4, 16, 64}) configs.push_back({p, k * 1024});
  std::vector<std::vector<double>> rate(configs.size()), peer(configs.size());
  std::vector<rill::gas_stats> totals(configs.size());
  std::uint64_t errors = 0;
  int ranks = 0, workers = 0;
  bool rank0 = false;
  int exit_code = 0;
  {
    rill::runtime rt(argc, argv);
    workers = rt.options().workers;
    exit_code = rt.run_spmd([&]() -> int {
      const auto world = rill::team::world();
      const int n = rill::rank_n(), me = rill::rank_me();
      if (n < 3) {
        if (me == 0) fmt::print(stderr, "A2 needs 3 ranks or more (--rill:ranks=4, or mpirun -np 4)\n");
        return 2;
      }
      rill::gaddr table;
      if (me == 0) table = rill::gas::alloc(words * 8, rill::dist::cyclic(block_bytes));
      table = world.broadcast(table, 0).get();
      // Every rank moves the blocks it is home to one or more ranks on.
      {
        std::vector<rill::event> moved;
        for (std::uint64_t b = static_cast<std::uint64_t>(me); b < blocks; b += static_cast<std::uint64_t>(n)) {
          const int to =
              (me + 1 + static_cast<int>((b / static_cast<std::uint64_t>(n)) % static_cast<std::uint64_t>(n - 1))) % n;
          moved.push_back(rill::gas::migrate(table + static_cast<std::int64_t>(b * block_bytes), to));
        }
        rill::merge(moved).wait();
      }
      int passes = 0;
      for (int rep = 0; rep < reps; ++rep)
        for (std::size_t c = 0; c < configs.size(); ++c) {
          // The unbounded baseline runs next to each bounded configuration.
          rill::gas::set_translation_cache(rill::gas_cache_policy::unbounded, 0);
          const double base = pass(table, updates);
          rill::gas::set_translation_cache(configs[c].policy, configs[c].entries);
          const rill::gas_stats before = rill::gas::stats();
          const double seconds = pass(table, updates);
          const rill::gas_stats after = rill::gas::stats();
          passes += 2;
          const auto sum = [&](std::uint64_t v) {
            return world.allreduce(v, rill::reduce::sum<std::uint64_t>{}).get();
          };
          const std::uint64_t hits = sum(after.cache_hits - before.cache_hits);
          const std::uint64_t misses = sum(after.cache_misses - before.cache_misses);
          const std::uint64_t evictions = sum(after.cache_evictions - before.cache_evictions);
          if (me == 0) {
            const double total = static_cast<double>(updates) * n;
            rate[c].push_back(total / seconds);
            peer[c].push_back(total / base);
            totals[c].cache_hits += hits;
            totals[c].cache_misses += misses;
            totals[c].cache_evictions += evictions;
            bench::progress("A2 {} rep {}: {:.3g}/s (unbounded {:.3g}/s), hits {} misses {} evictions {}",
                            configs[c].name(), rep, rate[c].back(), peer[c].back(), hits, misses, evictions);
          }
        }
      world.barrier().wait();
      if (me == 0) {
        // Every pass added each rank's stream once more.
        std::vector<std::uint64_t> expected(words, 0);
        for (int r = 0; r < n; ++r) {
          std::uint64_t state = bench::gups_start(r);
          bench::gups_updates(state, updates, words, [&](std::uint64_t i, std::uint64_t v) {
            expected[i] += v * static_cast<std::uint64_t>(passes);
          });
        }
        for (std::uint64_t b = 0; b < blocks; ++b) {
          const auto got =
              rill::gas::read<std::uint64_t>(table + static_cast<std::int64_t>(b * block_bytes), block_bytes / 8).get();
          for (std::uint64_t i = 0; i < block_bytes / 8; ++i) errors += got[i] != expected[b * block_bytes / 8 + i];
        }
        rill::gas::free(table).wait();
        rank0 = true;
        ranks = n;
      }
      world.barrier().wait();
      return 0;
    });
  }
  if (rank0) {
    for (std::size_t c = 0; c < configs.size(); ++c) {
      bench::result r;
      r.id = "A2";
      r.case_name = fmt::format(
          "{} blocks of {} B moved off their homes, 2^{} updates per rank, {} cache, {} ranks {}, "
          "{} worker{}",
          blocks, block_bytes, log_updates, configs[c].name(), ranks, mpi ? "mpi" : "local", workers,
          workers == 1 ? "" : "s");
      r.metric = "random updates";
      r.unit = "updates/s";
      r.higher_is_better = true;
      r.rill = rate[c];
      r.peer = "unbounded translation cache";
      r.peer_values = peer[c];
      r.extra = {{"ranks", ranks},
                 {"workers", workers},
                 {"transport", mpi ? "mpi" : "local"},
                 {"policy", configs[c].name()},
                 {"cache_hits", totals[c].cache_hits},
                 {"cache_misses", totals[c].cache_misses},
                 {"cache_evictions", totals[c].cache_evictions},
                 {"errors", errors}};
      bench::emit(r);
    }
  }
  if (mpi) MPI_Finalize();
  if (exit_code != 0) return exit_code;
  return errors == 0 ? 0 : 1;
}
