// R1 — event latency (Realm Fig. 4): a chain of N user events, each triggered once the previous
// one has (user_event::trigger(after)), event i owned by rank i % R so that with R > 1 every hop
// crosses ranks. Rank 0 triggers the first event and waits for the last; ns per hop = time / (N-1).
//
//   rill_bench_r1 --rill:ranks=1              1 rank, local: every hop is a local trigger
//   mpirun -np 2 rill_bench_r1                2 ranks, mpi: every hop is one notification message
//
// Peers in the same run: on one rank, a chain of N TBB flow-graph continue_nodes (1 thread), the
// nearest off-the-shelf "run this when that is done" machinery; under mpirun, MPI's one-way
// latency (half an 8-byte MPI_Send/MPI_Recv ping-pong), the limit for a remote hop, measured in
// processes of its own at MPI_THREAD_SINGLE (peer_apart.hpp; bench/run R1 runs both). Realm's own
// figure on this machine kind (0.26 us per local trigger, shared/anchors.md) is printed as
// `reference`, not as a peer: it was not measured in this run.
#include <tbb/flow_graph.h>
#include <tbb/global_control.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

// Creates event `index` of the chain on the calling rank and reports it to rank 0.
void create_on_owner(rill::user_event* chain, rill::latch* created, std::size_t index) {
  rill::am::send(
      rill::am::sender(),
      [](rill::user_event* out, rill::latch* done, std::size_t i, rill::user_event ev) {
        out[i] = ev;
        done->count_down();
      },
      chain, created, index, rill::user_event::create());
}

// Builds a chain of n events spread round-robin over the ranks and arms every hop on the owner of
// its event (so the owner subscribes to the previous event's owner). Returns the chain.
std::vector<rill::user_event> build_chain(std::size_t n) {
  const int ranks = rill::rank_n();
  std::vector<rill::user_event> chain(n);
  {
    rill::latch created(static_cast<std::ptrdiff_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      const int owner = static_cast<int>(i % static_cast<std::size_t>(ranks));
      if (owner == 0) {
        chain[i] = rill::user_event::create();
        created.count_down();
      } else {
        rill::am::send(owner, create_on_owner, chain.data(), &created, i);
      }
    }
    created.wait();
  }
  rill::latch armed(static_cast<std::ptrdiff_t>(n - 1));
  for (std::size_t i = 1; i < n; ++i) {
    const int owner = chain[i].owner();
    auto arm = [](rill::user_event self, rill::event previous, rill::latch* done) {
      self.trigger(previous);
      rill::am::send(
          rill::am::sender(), [](rill::latch* d) { d->count_down(); }, done);
    };
    rill::am::send(owner, arm, chain[i], static_cast<rill::event>(chain[i - 1]), &armed);
  }
  armed.wait();
  // Let the subscriptions the arming sent reach their owners (messages are unordered), and
  // subscribe rank 0 to the last event, before the clock starts. 2 ms is far more than they
  // need, and less than the time an idle worker polls before it sleeps (--rill:idle-poll-us,
  // 5 ms): the clock measures hops between ranks that are awake, not the first one's wake-up.
  (void)chain.back().has_triggered();
  const auto settle = bench::clock::now();
  while (bench::seconds_since(settle) < 0.002) rill::yield();
  return chain;
}

double rill_ns_per_hop(std::size_t n) {
  std::vector<rill::user_event> chain = build_chain(n);
  const auto t0 = bench::clock::now();
  chain.front().trigger();
  chain.back().wait();
  return bench::seconds_since(t0) * 1e9 / static_cast<double>(n - 1);
}

double tbb_ns_per_hop(std::size_t n) {
  tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
  tbb::flow::graph g;
  std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> nodes;
  nodes.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    nodes.push_back(std::make_unique<tbb::flow::continue_node<tbb::flow::continue_msg>>(
        g, [](const tbb::flow::continue_msg&) { return tbb::flow::continue_msg(); }));
  for (std::size_t i = 1; i < n; ++i) tbb::flow::make_edge(*nodes[i - 1], *nodes[i]);
  const auto t0 = bench::clock::now();
  nodes.front()->try_put(tbb::flow::continue_msg());
  g.wait_for_all();
  return bench::seconds_since(t0) * 1e9 / static_cast<double>(n - 1);
}

}  // namespace

int main(int argc, char** argv) {
  const bool mpi = rill::launched_by_mpi_launcher();
  if (mpi) bench::peer_apart::init_mpi(argc, argv);
  CLI::App app{"R1: latency of a chain of dependent user events, Rill vs TBB flow graph / MPI one-way"};
  app.allow_extras();  // --rill:* flags are for the runtime
  int reps = 7;
  std::size_t length = 20'000;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--length", length, "events in the chain");
  app.add_flag("--quick", quick, "small sizes");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  bench::peer_apart::require_mpirun(peer_files, mpi, "rill_bench_r1");
  if (quick) {
    reps = std::min(reps, 5);
    length = std::min<std::size_t>(length, 5'000);
  }
  if (length < 2) length = 2;

  std::vector<double> peer;
  std::string peer_name;
  const char* const program = "rill_bench_r1";
  const nlohmann::json peer_config = {{"reps", reps}};
  if (!peer_files.only.empty()) {
    bench::mpi_peer::ping_pong(8, 10'000);
    for (int r = 0; r < reps; ++r) peer.push_back(bench::mpi_peer::ping_pong(8, 100'000) * 1e9 / 2);
    bench::peer_apart::write(peer_files.only, program, peer_config, {{"one_way_ns", peer}});
    MPI_Finalize();
    return 0;
  }
  if (!peer_files.results.empty()) {
    peer_name = "MPI one-way latency (half ping-pong, 8B), processes of its own at MPI_THREAD_SINGLE";
    peer = bench::peer_apart::read_or_exit(peer_files.results, program, peer_config, [](const nlohmann::json& in) {
      return bench::peer_apart::series(in, "one_way_ns");
    });
  } else if (mpi) {
    bench::peer_apart::note_no_peer("R1");
  }

  std::vector<double> rill_values;
  int ranks = 0, workers = 0;
  {
    rill::runtime rt(argc, argv);
    ranks = rt.ranks();
    workers = rt.options().workers;
    rt.run([&] {
      rill_ns_per_hop(length / 10 + 2);  // warm-up: table growth, fibers, buffers
      for (int r = 0; r < reps; ++r) {
        rill_values.push_back(rill_ns_per_hop(length));
        bench::progress("R1 rill rep {}: {:.1f} ns/hop", r, rill_values.back());
      }
    });
  }
  if (!mpi) {
    peer_name = "TBB flow graph continue_node chain, 1 thread";
    tbb_ns_per_hop(length / 10 + 2);
    for (int r = 0; r < reps; ++r) peer.push_back(tbb_ns_per_hop(length));
  }

  if (!mpi || bench::mpi_peer::world_rank() == 0) {
    bench::result res;
    res.id = "R1";
    res.case_name = fmt::format("event chain, {} {}, {} {}, {}", ranks, ranks == 1 ? "rank" : "ranks", workers,
                                workers == 1 ? "worker" : "workers", mpi ? "mpi" : "local");
    res.metric = "latency per triggered event";
    res.unit = "ns/trigger";
    res.higher_is_better = false;
    res.rill = rill_values;
    res.peer = peer_name;
    res.peer_values = peer;
    res.extra = {{"ranks", ranks},
                 {"workers", workers},
                 {"transport", mpi ? "mpi" : "local"},
                 {"length", length},
                 {"hop", ranks == 1 ? "local" : "remote"},
                 {"reference", "Realm: 260 ns per local trigger (shared/anchors.md)"}};
    bench::emit(res);
  }
  if (mpi) MPI_Finalize();
  return 0;
}
