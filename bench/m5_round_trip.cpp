// M5 — remote function call round trip between 2 ranks (HabaneroUPC++ async_at, UPC++ rpc). Run
// under `mpirun -np 2` (transport mpi).
//
// Rill: rank 0's top-level task sends rank 1 a function that sends rank 0 back a function that
// counts down a latch; the task waits on the latch; µs per round trip over many iterations.
//   default:          nothing but the sends: buffers leave when the sending worker goes idle
//                     (rank 0's task suspends; rank 1's handler returns).
//   am::flush:        each side also calls rill::am::flush() right after its send.
//
// Peer in the same processes, before the runtime starts: MPI_Send/MPI_Recv ping-pong of 8 bytes
// on MPI_COMM_WORLD.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "rill/rill.hpp"

namespace {

rill::latch* g_reply = nullptr;  // rank 0

// Returns seconds per round trip. Stops early, after `budget_s`, when round trips are so slow that
// the repetition would take much longer (this happens under CPU contention, see docs/performance.md).
double rill_round_trips(long iterations, bool flush, double budget_s) {
  const auto t0 = bench::clock::now();
  long i = 0;
  for (; i < iterations; ++i) {
    if (i % 256 == 255 && bench::seconds_since(t0) > budget_s) {
      ++i;
      break;
    }
    rill::latch reply(1);
    g_reply = &reply;
    if (flush) {
      rill::am::send(1, [] {
        rill::am::send(0, [] { g_reply->count_down(); });
        rill::am::flush();
      });
      rill::am::flush();
    } else {
      rill::am::send(1, [] { rill::am::send(0, [] { g_reply->count_down(); }); });
    }
    reply.wait();
  }
  return bench::seconds_since(t0) / static_cast<double>(i);
}

}  // namespace

int main(int argc, char** argv) {
  bench::mpi_peer::init(argc, argv);
  const int me = bench::mpi_peer::world_rank();
  if (bench::mpi_peer::world_size() != 2) {
    if (me == 0) std::fputs("M5: run with mpirun -np 2\n", stderr);
    MPI_Finalize();
    return 2;
  }

  CLI::App app{"M5: active message round trip, Rill vs MPI ping-pong (mpirun -np 2)"};
  app.allow_extras();  // --rill:* flags are for the runtime
  int reps = 7;
  long iterations = 100'000;
  bool quick = false;
  double budget = 3.0;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--budget", budget, "seconds after which a Rill repetition stops early");
  app.add_option("--iterations", iterations, "round trips per repetition");
  app.add_flag("--quick", quick, "small sizes");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 5);
    iterations = std::min(iterations, 20'000L);
    budget = std::min(budget, 1.0);
  }

  std::vector<double> peer;
  bench::mpi_peer::ping_pong(8, iterations / 10);
  for (int r = 0; r < reps; ++r) {
    peer.push_back(bench::mpi_peer::ping_pong(8, iterations) * 1e6);
    if (me == 0) bench::progress("M5 mpi  rep {}: {:.3f} us", r, peer.back());
  }

  std::vector<double> plain, flushed;
  int workers = 0;
  {
    rill::runtime rt(argc, argv);
    workers = rt.options().workers;
    rt.run([&] {
      rill_round_trips(iterations / 10, false, budget);
      for (int r = 0; r < reps; ++r) {
        plain.push_back(rill_round_trips(iterations, false, budget) * 1e6);
        bench::progress("M5 rill rep {}: {:.3f} us", r, plain.back());
        flushed.push_back(rill_round_trips(iterations, true, budget) * 1e6);
        bench::progress("M5 rill flush rep {}: {:.3f} us", r, flushed.back());
      }
    });
  }

  if (me == 0) {
    for (bool flush : {false, true}) {
      bench::result r;
      r.id = "M5";
      r.case_name = flush ? "round trip with am::flush, 2 ranks mpi" : "round trip, 2 ranks mpi";
      r.metric = "round trip";
      r.unit = "us";
      r.higher_is_better = false;
      r.rill = flush ? flushed : plain;
      r.peer = "MPI ping-pong 8B";
      r.peer_values = peer;
      r.extra = {{"ranks", 2}, {"workers", workers}, {"transport", "mpi"}, {"iterations", iterations}};
      bench::emit(r);
    }
  }
  MPI_Finalize();
  return 0;
}
