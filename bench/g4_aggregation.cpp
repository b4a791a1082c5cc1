// G4 — aggregation sweep (Grappa §2.4): what a configuration of the aggregator (size threshold
// --rill:agg-bytes, age threshold --rill:agg-age-us) gives in message rate and costs in latency.
// bench/run G4 runs this once per configuration, on two ranks (local transport, then mpirun).
//
// Peer in the same run: the same runtime sending every message unaggregated (rill::am::flush()
// after each send, so each leaves in a buffer of its own), as BENCHMARKS.md asks. Three cases:
//   rate         rank 0 sends M 16-byte messages to rank 1, whose handler counts them; time from the
//                first send to the acknowledgement of the last. msgs/s.
//   busy sender  rank 0 works in 10 us stretches with a scheduling point (rill::yield) between them
//                and sends one time-stamped message after each, K times, while a second task works
//                in the same stretches: the worker is never out of work, so a message leaves when
//                its buffer is full or old enough. Rank 1 takes the time
//                each one took (CLOCK_MONOTONIC is one clock for the processes of a node) and
//                reports the median. us.
//   idle sender  K round trips: rank 0 sends, rank 1 replies, rank 0 waits for the reply. A rank that
//                runs out of work sends what it buffered at once (flush on idle), so here the
//                thresholds should cost nothing. us per round trip.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "rill/rill.hpp"

namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

struct blob16 {
  std::uint64_t stamp;
  std::uint64_t index;
};

// Rank 1: messages counted, the count that triggers the acknowledgement, and the latencies of the
// busy-sender case. Rank 0: the latch the acknowledgement opens and the median it carries.
std::atomic<std::uint64_t> g_count{0};
std::uint64_t g_target = 0;
std::vector<double> g_latencies_us;
rill::latch* g_ack = nullptr;
double g_reported_us = 0;

void acknowledge(double median_us) {
  rill::am::send(
      0,
      [](double m) {
        g_reported_us = m;
        g_ack->count_down();
      },
      median_us);
  rill::am::flush();
}

// Resets rank 1's count to expect `target` messages, and waits until it has (messages are not
// ordered: the data must not leave before the reset ran).
void arm(std::uint64_t target) {
  rill::latch ack(1);
  g_ack = &ack;
  rill::am::send(
      1,
      [](std::uint64_t t) {
        g_count.store(0);
        g_target = t;
        g_latencies_us.clear();
        g_latencies_us.reserve(t);
        acknowledge(0);
      },
      target);
  rill::am::flush();
  ack.wait();
}

void counted(bool record_latency, const blob16& b) {
  if (record_latency) g_latencies_us.push_back(static_cast<double>(now_ns() - b.stamp) / 1e3);
  if (g_count.fetch_add(1, std::memory_order_relaxed) + 1 == g_target)
    acknowledge(record_latency ? bench::summarize(g_latencies_us).median : 0);
}

double rate(long messages, bool aggregated) {
  arm(static_cast<std::uint64_t>(messages));
  rill::latch ack(1);
  g_ack = &ack;
  const auto t0 = bench::clock::now();
  for (long i = 0; i < messages; ++i) {
    rill::am::send(
        1, [](const blob16& b) { counted(false, b); }, blob16{0, static_cast<std::uint64_t>(i)});
    if (!aggregated) rill::am::flush();
  }
  rill::am::flush();
  ack.wait();
  return static_cast<double>(messages) / bench::seconds_since(t0);
}

void work_for_10us() {
  const std::uint64_t until = now_ns() + 10'000;
  while (now_ns() < until) {
  }
}

// Median latency (us) of `messages` sent one per 10 us stretch of work. A second task works in
// the same stretches meanwhile, so that the worker always has a ready fiber: it never runs out of
// work, and never sends what it buffered for that reason.
double busy_sender(long messages, bool aggregated) {
  arm(static_cast<std::uint64_t>(messages));
  rill::latch ack(1), companion_done(1);
  g_ack = &ack;
  std::atomic<bool> stop{false};
  rill::spawn([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      work_for_10us();
      rill::yield();
    }
    companion_done.count_down();
  });
  for (long i = 0; i < messages; ++i) {
    work_for_10us();
    rill::am::send(
        1, [](const blob16& b) { counted(true, b); }, blob16{now_ns(), static_cast<std::uint64_t>(i)});
    if (!aggregated) rill::am::flush();
    rill::yield();
  }
  stop.store(true, std::memory_order_relaxed);
  companion_done.wait();
  rill::am::flush();
  ack.wait();
  return g_reported_us;
}

rill::latch* g_reply = nullptr;

// Microseconds per round trip, over `trips` of them.
double idle_sender(long trips, bool aggregated) {
  const auto t0 = bench::clock::now();
  for (long i = 0; i < trips; ++i) {
    rill::latch reply(1);
    g_reply = &reply;
    rill::am::send(
        1,
        [](bool agg) {
          rill::am::send(0, [] { g_reply->count_down(); });
          if (!agg) rill::am::flush();
        },
        aggregated);
    if (!aggregated) rill::am::flush();
    reply.wait();
  }
  return bench::seconds_since(t0) * 1e6 / static_cast<double>(trips);
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  CLI::App app{"G4: aggregation sweep point, aggregated vs unaggregated (2 ranks)"};
  int reps = 5;
  long messages = 1L << 19;
  long stamped = 2000;
  long trips = 2000;
  bool quick = false;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--messages", messages, "messages of the rate case");
  app.add_option("--stamped", stamped, "messages of the busy-sender case");
  app.add_option("--trips", trips, "round trips of the idle-sender case");
  app.add_flag("--quick", quick, "small sizes");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 3);
    messages = std::min(messages, 1L << 17);
    stamped = std::min(stamped, 500L);
    trips = std::min(trips, 500L);
  }
  const rill::config& cfg = rt.options();
  const bool mpi = cfg.transport == rill::transport_kind::mpi;
  const std::string where = fmt::format("agg-bytes {}, agg-age-us {}, idle flush {}, 2 ranks {}", cfg.agg_bytes,
                                        cfg.agg_age_us, cfg.agg_idle_flush ? "on" : "off", mpi ? "mpi" : "local");
  auto make = [&](const char* what, const char* metric, const char* unit, bool higher) {
    bench::result r;
    r.id = "G4";
    r.case_name = fmt::format("{}, {}", what, where);
    r.metric = metric;
    r.unit = unit;
    r.higher_is_better = higher;
    r.peer = "unaggregated (am::flush after every send)";
    r.extra = {{"agg_bytes", cfg.agg_bytes},
               {"agg_age_us", cfg.agg_age_us},
               {"agg_idle_flush", cfg.agg_idle_flush},
               {"ranks", 2},
               {"transport", mpi ? "mpi" : "local"}};
    return r;
  };
  bench::result r_rate = make("rate of 16-byte messages", "message rate", "msgs/s", true);
  bench::result r_busy = make("latency, busy sender", "median latency", "us", false);
  bench::result r_idle = make("round trip, idle sender", "round trip", "us", false);
  const int code = rt.run([&] {
    if (rill::rank_n() != 2) {
      bench::progress("G4: needs 2 ranks (--rill:ranks=2, or mpirun -np 2)");
      return 2;
    }
    for (int rep = 0; rep < reps; ++rep) {  // the forms take turns, so a noisy spell hits both
      r_rate.peer_values.push_back(rate(messages, false));
      r_rate.rill.push_back(rate(messages, true));
      r_busy.peer_values.push_back(busy_sender(stamped, false));
      r_busy.rill.push_back(busy_sender(stamped, true));
      r_idle.peer_values.push_back(idle_sender(trips, false));
      r_idle.rill.push_back(idle_sender(trips, true));
      bench::progress("G4 {} rep {}: rate {:.1f} / {:.1f} M/s, busy {:.1f} / {:.1f} us, idle {:.2f} / {:.2f} us", where,
                      rep, r_rate.rill.back() / 1e6, r_rate.peer_values.back() / 1e6, r_busy.rill.back(),
                      r_busy.peer_values.back(), r_idle.rill.back(), r_idle.peer_values.back());
    }
    return 0;
  });
  if (code != 0) return code;
  if (!r_rate.rill.empty()) {  // the process of rank 0, which ran the top-level task
    bench::emit(r_rate);
    bench::emit(r_busy);
    bench::emit(r_idle);
  }
  return 0;
}
