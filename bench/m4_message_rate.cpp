// M4 — active message rate and bandwidth between 2 ranks (Grappa §2.4). Run under
// `mpirun -np 2` (transport mpi).
//
// Rill: rank 0's top-level task sends M active messages to rank 1, whose handler counts them; when
// the count reaches M, rank 1 sends rank 0 an acknowledgement that opens a latch. Rate = M / time
// from the first send to the acknowledgement. Payloads are the handler's argument: a trivially
// copyable std::array of S bytes (no callable bytes: the lambdas capture nothing).
//   aggregated:      default settings (messages share 4 KiB buffers).
//   not aggregated:  rill::am::flush() after every send, so every message leaves in a buffer of its
//                    own (still framed and dispatched by the runtime, with at most 64 buffers in
//                    flight per destination).
//   64 KiB:          above the 16 KiB large-payload threshold, so each travels in a buffer of its
//                    own; reported as GB/s of payload. Two argument types: std::vector<std::byte>
//                    and std::vector<unsigned char> (both serialized; until commit 80a9db4 cereal
//                    copied std::byte vectors one element at a time, ~100x slower), and
//                    rill::view<std::byte> (copied into the message, read in place by the handler),
//                    and the same view sent with am::send_zero_copy (read in place by MPI too; the
//                    sender reuses one of 64 buffers once its send has completed).
//                    With --array-64k also a trivially copyable struct holding a std::array of 64
//                    KiB, which needs --rill:stack of at least 256KiB: the handler's argument copy
//                    lives on the fiber stack (the default 64 KiB stack overflows).
//
// Peer: MPI Isend/Irecv on MPI_COMM_WORLD with a window of 64 and an ack per window (OSU
// message-rate style), for each payload size, in processes of its own at MPI_THREAD_SINGLE
// (peer_apart.hpp: at SERIALIZED, which Rill's processes need, Open MPI 4.1 sends 8-byte messages
// at 0.79 and 64 KiB at 0.88 of the rate). bench/run M4 starts the peer's run and Rill's together
// and they take turns, repetition by repetition (--mpi-peer-turns); each Rill repetition starts a
// runtime of its own.
#include <CLI/CLI.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common.hpp"
#include "mpi_peer.hpp"
#include "peer_apart.hpp"
#include "rill/rill.hpp"

namespace {

template <std::size_t S>
struct blob {
  std::array<std::byte, S> bytes;
};

// Rank 1: messages counted and the count that triggers the acknowledgement.
std::atomic<std::uint64_t> g_count{0};
std::atomic<std::uint64_t> g_target{0};
// Rank 0: the latch the acknowledgement opens.
rill::latch* g_ack = nullptr;

void acknowledge() {
  rill::am::send(0, [] { g_ack->count_down(); });
}

void on_message() {
  if (g_count.fetch_add(1, std::memory_order_relaxed) + 1 == g_target.load(std::memory_order_relaxed)) acknowledge();
}

// Sets rank 1's target (and resets its count), and waits until that is done: messages are not
// ordered, so the data must not leave before the reset has run.
void arm(std::uint64_t target) {
  rill::latch ack(1);
  g_ack = &ack;
  rill::am::send(
      1,
      [](std::uint64_t t) {
        g_count.store(0);
        g_target.store(t);
        acknowledge();
      },
      target);
  rill::am::flush();
  ack.wait();
}

template <std::size_t S>
double rill_rate(long messages, bool aggregated) {
  arm(static_cast<std::uint64_t>(messages));
  rill::latch ack(1);
  g_ack = &ack;
  blob<S> payload{};
  const auto t0 = bench::clock::now();
  for (long i = 0; i < messages; ++i) {
    payload.bytes[0] = static_cast<std::byte>(i);
    rill::am::send(
        1, [](const blob<S>&) { on_message(); }, payload);
    if (!aggregated) rill::am::flush();
  }
  rill::am::flush();
  ack.wait();
  return static_cast<double>(messages) / bench::seconds_since(t0);
}

// GB/s of `messages` sends of `bytes` each to rank 1; send_one(i) marks the payload with i and
// sends it.
template <class SendOne>
double timed_sends(long messages, std::size_t bytes, SendOne send_one) {
  arm(static_cast<std::uint64_t>(messages));
  rill::latch ack(1);
  g_ack = &ack;
  const auto t0 = bench::clock::now();
  for (long i = 0; i < messages; ++i) send_one(i);
  rill::am::flush();
  ack.wait();
  return static_cast<double>(messages) * static_cast<double>(bytes) / bench::seconds_since(t0) / 1e9;
}

// Payload is a std::vector of some element type, or a blob (a trivially copyable std::array).
template <class Payload>
double rill_bandwidth(long messages, std::size_t bytes) {
  Payload payload{};
  if constexpr (requires { payload.resize(bytes); }) payload.resize(bytes);
  return timed_sends(messages, bytes, [&](long i) {
    if constexpr (requires { payload.resize(bytes); })
      payload[0] = static_cast<typename Payload::value_type>(i);
    else
      payload.bytes[0] = static_cast<std::byte>(i);
    rill::am::send(
        1, [](const Payload&) { on_message(); }, payload);
  });
}

// The payload as a rill::view of the sender's bytes: copied once into the message, and the handler
// reads it in the received buffer (no vector is built there).
double rill_bandwidth_view(long messages, std::size_t bytes) {
  std::vector<std::byte> payload(bytes);
  return timed_sends(messages, bytes, [&](long i) {
    payload[0] = static_cast<std::byte>(i);
    rill::am::send(
        1, [](rill::view<std::byte>) { on_message(); }, rill::view(payload));
  });
}

// The payload as a rill::view sent with am::send_zero_copy: MPI reads the sender's bytes in place.
// The sender cycles through 64 buffers (MPI's window) and reuses one once its send has completed
// (with 8 or 2 buffers the sender waits for completions: 0.55-0.75x the rate of 64).
double rill_bandwidth_zero_copy(long messages, std::size_t bytes) {
  constexpr std::size_t ring = 64;
  std::vector<std::vector<std::byte>> payloads(ring, std::vector<std::byte>(bytes));
  std::vector<rill::event> sent(ring);
  return timed_sends(messages, bytes, [&](long i) {
    const auto slot = static_cast<std::size_t>(i) % ring;
    sent[slot].wait();
    payloads[slot][0] = static_cast<std::byte>(i);
    sent[slot] = rill::am::send_zero_copy(
        1, [](rill::view<std::byte>) { on_message(); }, rill::view(payloads[slot]));
  });
}

constexpr std::size_t big = 64 * 1024;

struct big_case {
  const char* name;  // in the case text
  double (*run)(long, std::size_t);
  long messages;
};

struct rate_case {
  std::size_t bytes;
  bool aggregated;
  long messages;
};

}  // namespace

int main(int argc, char** argv) {
  bench::peer_apart::init_mpi(argc, argv);
  const int me = bench::mpi_peer::world_rank();
  if (bench::mpi_peer::world_size() != 2) {
    if (me == 0) std::fputs("M4: run with mpirun -np 2\n", stderr);
    MPI_Finalize();
    return 2;
  }

  CLI::App app{"M4: active message rate and bandwidth, Rill vs MPI (mpirun -np 2)"};
  app.allow_extras();  // --rill:* flags are for the runtime
  int reps = 7;
  bool quick = false;
  double scale = 1.0;
  app.add_option("--reps", reps, "repetitions");
  app.add_option("--scale", scale, "multiplies every message count");
  std::vector<std::size_t> sizes{8, 16, 64, 1024};
  std::vector<std::string> modes{"aggregated", "not-aggregated"};
  bool bandwidth = true;
  bool rates = true;
  bool array_64k = false;
  app.add_flag("--quick", quick, "small sizes");
  app.add_option("--sizes", sizes, "payload sizes of the message-rate cases");
  app.add_option("--modes", modes, "aggregated and/or not-aggregated");
  app.add_flag("!--no-bandwidth", bandwidth, "skip the 64 KiB bandwidth cases");
  app.add_flag("!--no-rate", rates, "skip the message-rate cases");
  app.add_flag("--array-64k", array_64k, "also 64 KiB as a std::array argument (needs --rill:stack=256KiB or more)");
  bench::peer_apart::files peer_files;
  bench::peer_apart::add_options(app, peer_files, true);
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    reps = std::min(reps, 5);
    scale *= 0.25;
  }
  auto count = [&](long n) { return std::max(64L, static_cast<long>(static_cast<double>(n) * scale)); };

  std::vector<rate_case> cases;
  if (!rates) modes.clear();
  for (const std::string& mode : modes) {
    if (mode != "aggregated" && mode != "not-aggregated") {
      if (me == 0) std::fprintf(stderr, "M4: unknown mode '%s'\n", mode.c_str());
      MPI_Finalize();
      return 2;
    }
    const bool agg = mode == "aggregated";
    for (std::size_t s : sizes) {
      if (s != 8 && s != 16 && s != 64 && s != 1024) {
        if (me == 0) std::fprintf(stderr, "M4: payload sizes are 8, 16, 64 and 1024\n");
        MPI_Finalize();
        return 2;
      }
      cases.push_back({s, agg, count(agg ? (s <= 64 ? 4'000'000 : 1'000'000) : 200'000)});
    }
  }
  std::vector<big_case> bigs;
  if (bandwidth) {
    bigs.push_back({"std::vector<std::byte>", &rill_bandwidth<std::vector<std::byte>>, count(8192)});
    bigs.push_back({"std::vector<unsigned char>", &rill_bandwidth<std::vector<unsigned char>>, count(8192)});
    bigs.push_back({"rill::view<std::byte>", &rill_bandwidth_view, count(8192)});
    bigs.push_back({"rill::view<std::byte> zero-copy", &rill_bandwidth_zero_copy, count(8192)});
    if (array_64k) bigs.push_back({"std::array (trivially copyable)", &rill_bandwidth<blob<big>>, count(8192)});
  }
  const long big_messages = count(8192);
  const int window = 64;

  // Repetitions alternate between the MPI peer and Rill (with --mpi-peer-turns), each Rill
  // repetition in a runtime of its own: this host's memory bandwidth drifts between modes a factor
  // of 2 apart over seconds, and when all peer repetitions ran before all Rill ones, a drift
  // between the two halves set the ratio (0.6 to 1.4 for the same build). Within a repetition the
  // side that goes first alternates too.
  std::vector<std::vector<double>> peer(cases.size());
  std::vector<double> peer_bw;
  auto peer_repetition = [&](int r) {
    for (std::size_t c = 0; c < cases.size(); ++c) {
      if (!cases[c].aggregated) continue;  // same input as the aggregated case of that size
      const long msgs = count(2'000'000);
      if (r == 0) bench::mpi_peer::message_rate(cases[c].bytes, msgs / 10, window);
      peer[c].push_back(bench::mpi_peer::message_rate(cases[c].bytes, msgs, window));
      if (me == 0) bench::progress("M4 mpi  {}B rep {}: {:.3f} M msgs/s", cases[c].bytes, r, peer[c].back() / 1e6);
    }
    if (!bigs.empty()) {
      if (r == 0) bench::mpi_peer::message_rate(big, big_messages / 10, window);
      peer_bw.push_back(bench::mpi_peer::message_rate(big, big_messages, window) * static_cast<double>(big) / 1e9);
      if (me == 0) bench::progress("M4 mpi  64KiB rep {}: {:.3f} GB/s", r, peer_bw.back());
    }
  };
  const bench::peer_apart::turns turns(peer_files.turns, "rill_bench_m4", reps);
  using side = bench::peer_apart::turns::side;
  const char* const program = "rill_bench_m4";
  nlohmann::json peer_config = {{"reps", reps}, {"scale", scale}, {"window", window}, {"bandwidth", !bigs.empty()}};
  for (const rate_case& k : cases) peer_config["cases"].push_back({k.bytes, k.aggregated});
  if (!peer_files.only.empty()) {
    turns.take(side::peer, peer_config, peer_repetition);
    turns.hand_over(peer_files.only, program, peer_config, {{"rates", peer}, {"bandwidth_gbps", peer_bw}});
    MPI_Finalize();
    return 0;
  }

  std::vector<std::vector<double>> rill_values(cases.size());
  std::vector<std::vector<double>> rill_bw(bigs.size());
  int workers = 0;
  auto rill_repetition = [&](int r) {
    std::vector<char*> args(argv, argv + argc + 1);  // each runtime consumes its --rill:* flags
    int args_count = argc;
    rill::runtime rt(args_count, args.data());
    workers = rt.options().workers;
    if (array_64k && rt.options().stack_bytes < 4 * big) {
      if (me == 0) std::fputs("M4: --array-64k needs --rill:stack=256KiB or more\n", stderr);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rt.run([&] {
      for (std::size_t c = 0; c < cases.size(); ++c) {
        const rate_case& k = cases[c];
        auto once = [&](long n) {
          switch (k.bytes) {
            case 8: return rill_rate<8>(n, k.aggregated);
            case 16: return rill_rate<16>(n, k.aggregated);
            case 64: return rill_rate<64>(n, k.aggregated);
            default: return rill_rate<1024>(n, k.aggregated);
          }
        };
        once(k.messages / 10);
        rill_values[c].push_back(once(k.messages));
        bench::progress("M4 rill {}B {} rep {}: {:.3f} M msgs/s", k.bytes,
                        k.aggregated ? "aggregated" : "not aggregated", r, rill_values[c].back() / 1e6);
      }
      // The payload types take turns within the repetition, for the same reason.
      for (const big_case& b : bigs) b.run(std::max(1L, b.messages / 10), big);
      for (std::size_t b = 0; b < bigs.size(); ++b) {
        rill_bw[b].push_back(bigs[b].run(bigs[b].messages, big));
        bench::progress("M4 rill 64KiB {} rep {}: {:.3f} GB/s", bigs[b].name, r, rill_bw[b].back());
      }
    });
  };

  if (peer_files.results.empty()) bench::peer_apart::note_no_peer("M4");
  turns.take(side::rill, peer_config, rill_repetition);
  if (!peer_files.results.empty()) {
    std::tie(peer, peer_bw) = turns.collect(peer_files.results, program, peer_config, [&](const nlohmann::json& in) {
      auto rates = in.at("rates").get<std::vector<std::vector<double>>>();
      if (rates.size() != cases.size()) throw std::runtime_error("not one series per case");
      return std::pair{rates, in.at("bandwidth_gbps").get<std::vector<double>>()};
    });
  }
  for (std::size_t c = 0; c < cases.size(); ++c) {
    if (cases[c].aggregated) continue;
    for (std::size_t d = 0; d < cases.size(); ++d)
      if (cases[d].aggregated && cases[d].bytes == cases[c].bytes) peer[c] = peer[d];
  }

  if (me == 0) {
    double mpi_8b = 0;  // MPI's 8-byte rate, which the 16-byte target compares with
    for (std::size_t c = 0; c < cases.size(); ++c)
      if (cases[c].bytes == 8 && !peer[c].empty()) mpi_8b = bench::summarize(peer[c]).median;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const rate_case& k = cases[c];
      bench::result r;
      r.id = "M4";
      r.case_name = fmt::format("{}B {}, 2 ranks mpi", k.bytes,
                                k.aggregated ? "aggregated" : "not aggregated (am::flush after each send)");
      r.metric = "active message rate";
      r.unit = "msgs/s";
      r.higher_is_better = true;
      r.rill = rill_values[c];
      r.peer =
          fmt::format("MPI Isend/Irecv window {}, {}B, processes of its own at MPI_THREAD_SINGLE", window, k.bytes);
      r.peer_values = peer[c];
      r.extra = {{"ranks", 2},
                 {"workers", workers},
                 {"transport", "mpi"},
                 {"payload_bytes", k.bytes},
                 {"aggregated", k.aggregated},
                 {"messages", k.messages}};
      if (k.bytes == 16 && k.aggregated && mpi_8b > 0) {
        // The target compares this case with MPI's 8-byte rate.
        r.extra["mpi_8B_rate"] = mpi_8b;
        r.extra["ratio_vs_mpi_8B"] = bench::summarize(r.rill).median / mpi_8b;
      }
      bench::emit(r);
    }
    for (std::size_t b = 0; b < bigs.size(); ++b) {
      bench::result bw;
      bw.id = "M4";
      bw.case_name = fmt::format("64KiB {} payload, 2 ranks mpi", bigs[b].name);
      bw.metric = "bandwidth";
      bw.unit = "GB/s";
      bw.higher_is_better = true;
      bw.rill = rill_bw[b];
      bw.peer = fmt::format("MPI Isend/Irecv window {}, 64KiB, processes of its own at MPI_THREAD_SINGLE", window);
      bw.peer_values = peer_bw;
      bw.extra = {{"ranks", 2},           {"workers", workers},           {"transport", "mpi"},
                  {"payload_bytes", big}, {"messages", bigs[b].messages}, {"peer_messages", big_messages}};
      bench::emit(bw);
    }
  }
  MPI_Finalize();
  return 0;
}
