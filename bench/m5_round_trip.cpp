// M5 — remote function call round trip between 2 ranks (HabaneroUPC++ async_at, UPC++ rpc). Run
// under `mpirun -np 2` (transport mpi).
//
// Rill: rank 0's top-level task sends rank 1 a function that sends rank 0 back a function that
// counts down a latch; the task waits on the latch; µs per round trip over many iterations.
//   default:          nothing but the sends: buffers leave when the sending worker goes idle
//                     (rank 0's task suspends; rank 1's handler returns).
//   am::flush:        each side also calls rill::am::flush() right after its send.
//   am::send_inline:  as am::flush, both functions sent with rill::am::send_inline (with
//                     --rill:progress=thread they run on the progress threads).
//   long tasks:       as am::send_inline, while every worker of rank 1 runs a task that computes
//                     for --task-us between calls to rill::yield(), all the time: with a progress
//                     thread rank 1 answers at once, otherwise at a worker's next yield.
// Case names say the progress mode (--rill:progress) and whether node rings carry the messages
// (RILL_NODE_RING=0: every message through MPI, as between nodes).
//
// Peer: MPI_Send/MPI_Recv ping-pong of 8 bytes on MPI_COMM_WORLD, in processes of its own at
// MPI_THREAD_SINGLE (peer_apart.hpp: --mpi-peer-only F, then the Rill run with
// --mpi-peer-results F; bench/run M5 does both).
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

rill::latch* g_reply = nullptr;  // rank 0

// How the request and its reply are sent.
enum class sending { plain, flushed, inline_handlers };

void send_request(sending how) {
  switch (how) {
    case sending::plain: rill::am::send(1, [] { rill::am::send(0, [] { g_reply->count_down(); }); }); return;
    case sending::flushed:
      rill::am::send(1, [] {
        rill::am::send(0, [] { g_reply->count_down(); });
        rill::am::flush();
      });
      break;
    case sending::inline_handlers:
      rill::am::send_inline(1, [] {
        rill::am::send_inline(0, [] { g_reply->count_down(); });
        rill::am::flush();
      });
      break;
  }
  rill::am::flush();
}

// Returns seconds per round trip. Stops early, after `budget_s`, when round trips are so slow that
// the repetition would take much longer (under CPU contention, see docs/performance.md, and to a
// rank whose workers run long tasks).
double rill_round_trips(long iterations, sending how, double budget_s) {
  const auto t0 = bench::clock::now();
  long i = 0;
  for (; i < iterations; ++i) {
    if (i % 16 == 15 && bench::seconds_since(t0) > budget_s) {
      ++i;
      break;
    }
    rill::latch reply(1);
    g_reply = &reply;
    send_request(how);
    reply.wait();
  }
  return bench::seconds_since(t0) / static_cast<double>(i);
}

// Rank 1: its long tasks run while this is false.
std::atomic<bool> g_stop_long_tasks{false};
std::atomic<int> g_long_tasks_running{0};  // rank 0: long tasks rank 1 reported started

// Computes for task_us between yields until rank 0 says stop.
void long_task(long task_us) {
  rill::am::send_inline(0, [] { g_long_tasks_running.fetch_add(1); });
  rill::am::flush();
  while (!g_stop_long_tasks.load(std::memory_order_acquire)) {
    const auto t0 = bench::clock::now();
    while (bench::seconds_since(t0) * 1e6 < static_cast<double>(task_us)) {
    }
    rill::yield();
  }
}

}  // namespace

int main(int argc, char** argv) {
  bench::peer_apart::init_mpi(argc, argv);
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
  long task_us = 1000;
  bool quick = false;
  double budget = 3.0;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--budget", budget, "seconds after which a Rill repetition stops early");
  app.add_option("--iterations", iterations, "round trips per repetition");
  app.add_option("--task-us", task_us, "long tasks: microseconds of computation between yields");
  app.add_flag("--quick", quick, "small sizes");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files);
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 5);
    iterations = std::min(iterations, 20'000L);
    budget = std::min(budget, 1.0);
  }

  const char* const program = "rill_bench_m5";
  const nlohmann::json peer_config = {{"ranks", 2}, {"iterations", iterations}, {"reps", reps}};
  if (!peer_files.only.empty()) {
    std::vector<double> peer;
    bench::mpi_peer::ping_pong(8, iterations / 10);
    for (int r = 0; r < reps; ++r) {
      peer.push_back(bench::mpi_peer::ping_pong(8, iterations) * 1e6);
      if (me == 0) bench::progress("M5 mpi  rep {}: {:.3f} us", r, peer.back());
    }
    bench::peer_apart::write(peer_files.only, program, peer_config, {{"ping_pong_us", peer}});
    MPI_Finalize();
    return 0;
  }
  std::vector<double> peer;
  if (!peer_files.results.empty())
    peer = bench::peer_apart::read_or_exit(peer_files.results, program, peer_config, [](const nlohmann::json& in) {
      return bench::peer_apart::series(in, "ping_pong_us");
    });
  else
    bench::peer_apart::note_no_peer("M5");

  // Per case: Rill's microseconds per round trip, one value per repetition.
  const std::vector<std::string> cases = {"round trip", "round trip with am::flush", "round trip with am::send_inline",
                                          "round trip to a rank whose workers all run long tasks (send_inline)"};
  std::vector<std::vector<double>> rill_us(cases.size());
  int workers = 0;
  std::string mode;
  {
    rill::runtime rt(argc, argv);
    workers = rt.options().workers;
    mode = std::string(rt.options().progress == rill::progress_mode::thread ? "progress thread" : "progress worker") +
           (rt.options().node_ring_bytes == 0 ? ", no node rings" : "");
    rt.run([&] {
      const sending idle[] = {sending::plain, sending::flushed, sending::inline_handlers};
      rill_round_trips(iterations / 10, sending::plain, budget);
      for (int r = 0; r < reps; ++r)
        for (std::size_t c = 0; c < 3; ++c) {
          rill_us[c].push_back(rill_round_trips(iterations, idle[c], budget) * 1e6);
          bench::progress("M5 rill {} rep {}: {:.3f} us", cases[c], r, rill_us[c].back());
        }
      rill::finish([&] {
        for (int w = 0; w < workers; ++w) rill::async_at(1, long_task, task_us);
        while (g_long_tasks_running.load() < workers) rill::yield();
        rill_round_trips(iterations / 100, sending::inline_handlers, budget / 4);
        for (int r = 0; r < reps; ++r) {
          rill_us[3].push_back(rill_round_trips(iterations / 10, sending::inline_handlers, budget) * 1e6);
          bench::progress("M5 rill {} rep {}: {:.3f} us", cases[3], r, rill_us[3].back());
        }
        rill::am::send_inline(1, [] { g_stop_long_tasks.store(true, std::memory_order_release); });
        rill::am::flush();
      });
    });
  }

  if (me == 0) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      bench::result r;
      r.id = "M5";
      r.case_name = cases[c] + ", 2 ranks mpi, " + mode;
      r.metric = "round trip";
      r.unit = "us";
      r.higher_is_better = false;
      r.rill = rill_us[c];
      r.peer = "MPI ping-pong 8B, processes of its own at MPI_THREAD_SINGLE";
      r.peer_values = peer;
      r.extra = {{"ranks", 2}, {"workers", workers}, {"transport", "mpi"}, {"iterations", iterations}};
      if (c == 3) r.extra["task_us"] = task_us;
      bench::emit(r);
    }
  }
  MPI_Finalize();
  return 0;
}
