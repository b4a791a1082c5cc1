// A1 (HPX-5 Fig. 8): GUPS on a table of four relocatable blocks while blocks move.
//
// The table is four blocks of rill::gas memory (dist::cyclic, 64 KiB each). Every rank adds
// pseudo-random values (HPCC's stream) to the words their low bits name, with feed-forward calls
// (rill::gas::call_ff). The run is cut into M + 1 slices with a barrier between them; between
// slices rank 0 moves one block to another rank (rill::gas::migrate), so after M moves ranks
// reach moved blocks through stale caches and the home's directory. Reported: the update rate
// over the slices (remaps excluded, as the paper's Fig. 8a) and the time of each remap (Fig. 8b).
//
// Peer in the same run: the same updates and slices on a non-relocatable global_array with the same
// blocks (rill::delegate::call_ff on global pointers). `errors` counts the words that differ from a
// sequential model of every rank's adds: a lost or doubled update makes it non-zero.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <vector>

#include "common.hpp"
#include "gups_stream.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

constexpr std::uint64_t block_bytes = 64 * 1024;
constexpr std::uint64_t words = 4 * block_bytes / 8;

using add_fn = void (*)(std::uint64_t&, std::uint64_t);
void add(std::uint64_t& w, std::uint64_t v) { w += v; }

// The table every rank's `updates` adds produce, from zero.
std::vector<std::uint64_t> model(int ranks, std::uint64_t updates) {
  std::vector<std::uint64_t> t(words, 0);
  for (int r = 0; r < ranks; ++r) {
    std::uint64_t state = bench::gups_start(r);
    bench::gups_updates(state, updates, words, [&](std::uint64_t i, std::uint64_t v) { t[i] += v; });
  }
  return t;
}

struct pass_result {
  double update_seconds = 0;
  std::vector<double> remap_seconds;
};

// One pass of `updates` per rank in moves + 1 slices; `update` issues one add into `done`.
template <class Update>
pass_result run_pass(std::uint64_t updates, int moves, Update update, rill::gaddr relocatable) {
  const auto world = rill::team::world();
  const int me = rill::rank_me(), ranks = rill::rank_n();
  pass_result out;
  std::uint64_t state = bench::gups_start(me);
  const auto slices = static_cast<std::uint64_t>(moves + 1);
  for (std::uint64_t s = 0; s < slices; ++s) {
    const std::uint64_t count = updates / slices + (s < updates % slices ? 1 : 0);
    world.barrier().wait();
    const auto t0 = bench::clock::now();
    {
      rill::completion_counter done;
      bench::gups_updates(state, count, words, [&](std::uint64_t i, std::uint64_t v) { update(done, i, v); });
      done.wait();
    }
    world.barrier().wait();
    out.update_seconds += bench::seconds_since(t0);
    if (s + 1 < slices && me == 0 && !relocatable.is_null() && ranks > 1) {
      const std::uint64_t block = s % 4;
      const rill::gaddr b = relocatable + static_cast<std::int64_t>(block * block_bytes);
      const int to = (rill::gas::owner(b).get() + 1 + static_cast<int>(s / 4) % (ranks - 1)) % ranks;
      const auto r0 = bench::clock::now();
      rill::gas::migrate(b, to).wait();
      out.remap_seconds.push_back(bench::seconds_since(r0));
    }
  }
  return out;
}

double median(std::vector<double> v) { return v.empty() ? 0 : bench::summarize(std::move(v)).median; }

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::mpi_peer::init(argc, argv);
  CLI::App app{"A1: GUPS on four relocatable blocks with 0..64 block moves, against a non-relocatable global array"};
  app.allow_extras();
  bench::gups_options opt;
  opt.add_to(app);
  CLI11_PARSE(app, argc, argv);
  const std::uint64_t updates = opt.finish_parsing();
  const int reps = opt.reps, log_updates = opt.log_updates;
  const int move_counts[] = {0, 1, 4, 16, 64};
  constexpr std::size_t cases = std::size(move_counts);
  std::vector<double> rill_rate[cases], peer_rate[cases], remaps[cases];
  std::uint64_t errors[cases] = {}, peer_errors[cases] = {};
  int ranks = 0, workers = 0;
  bool rank0 = false;
  {
    rill::runtime rt(argc, argv);
    workers = rt.options().workers;
    rt.run_spmd([&] {
      const auto world = rill::team::world();
      const int n = rill::rank_n(), me = rill::rank_me();
      for (std::size_t c = 0; c < cases; ++c)
        for (int rep = 0; rep < reps; ++rep) {
          rill::gaddr table;
          rill::global_array<std::uint64_t> peer;
          if (me == 0) {
            table = rill::gas::alloc(words * 8, rill::dist::cyclic(block_bytes));
            peer = rill::global_alloc<std::uint64_t>(words, rill::dist::cyclic(block_bytes));
          }
          table = world.broadcast(table, 0).get();
          peer = world.broadcast(peer, 0).get();
          // The forms take turns in each repetition.
          const pass_result agas = run_pass(
              updates, move_counts[c],
              [table](rill::completion_counter& done, std::uint64_t i, std::uint64_t v) {
                rill::gas::call_ff<std::uint64_t>(done, table + static_cast<std::int64_t>(i * 8), &add, v);
              },
              table);
          const pass_result pgas = run_pass(
              updates, move_counts[c],
              [peer](rill::completion_counter& done, std::uint64_t i, std::uint64_t v) {
                rill::delegate::call_ff(done, peer[i], &add, v);
              },
              rill::gaddr());
          world.barrier().wait();
          if (me == 0) {
            const auto expected = model(n, updates);
            std::vector<std::uint64_t> got;
            for (std::uint64_t b = 0; b < 4; ++b) {
              auto part =
                  rill::gas::read<std::uint64_t>(table + static_cast<std::int64_t>(b * block_bytes), block_bytes / 8)
                      .get();
              got.insert(got.end(), part.begin(), part.end());
            }
            std::uint64_t e = 0, pe = 0;
            for (std::uint64_t i = 0; i < words; ++i) {
              e += got[i] != expected[i];
              pe += rill::rget(peer[i]).get() != expected[i];
            }
            errors[c] += e;
            peer_errors[c] += pe;
            const double total = static_cast<double>(updates) * n;
            rill_rate[c].push_back(total / agas.update_seconds);
            peer_rate[c].push_back(total / pgas.update_seconds);
            remaps[c].insert(remaps[c].end(), agas.remap_seconds.begin(), agas.remap_seconds.end());
            bench::progress(
                "A1 {} moves rep {}: agas {:.3g}/s, global_array {:.3g}/s, median remap {:.3g} s, {} errors",
                move_counts[c], rep, rill_rate[c].back(), peer_rate[c].back(), median(agas.remap_seconds), e + pe);
            rill::gas::free(table).wait();
            rill::global_free(peer);
            rank0 = true;
            ranks = n;
          }
          world.barrier().wait();
        }
    });
  }
  if (rank0) {
    for (std::size_t c = 0; c < cases; ++c) {
      bench::result r;
      r.id = "A1";
      r.case_name =
          fmt::format("4 blocks of 64 KiB, 2^{} updates per rank, {} moves, {} ranks {}, {} worker{}", log_updates,
                      move_counts[c], ranks, mpi ? "mpi" : "local", workers, workers == 1 ? "" : "s");
      r.metric = "random updates (remaps excluded)";
      r.unit = "updates/s";
      r.higher_is_better = true;
      r.rill = rill_rate[c];
      r.peer = "non-relocatable global_array, delegate::call_ff";
      r.peer_values = peer_rate[c];
      r.extra = {{"ranks", ranks},
                 {"workers", workers},
                 {"transport", mpi ? "mpi" : "local"},
                 {"moves", move_counts[c]},
                 {"remap_seconds_median", median(remaps[c])},
                 {"remaps_timed", remaps[c].size()},
                 {"errors", errors[c]},
                 {"peer_errors", peer_errors[c]}};
      bench::emit(r);
    }
  }
  if (mpi) MPI_Finalize();
  for (std::size_t c = 0; c < cases; ++c)
    if (errors[c] || peer_errors[c]) return 1;
  return 0;
}
