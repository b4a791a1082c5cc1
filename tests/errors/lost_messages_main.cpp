// Traffic for the fault injector of the local transport (--rill:faults): what it loses or holds
// back must end the run with a report (exit code 3), never a silent hang; a slow rank must not.
//   fire-and-forget: rank 0 sends plain messages, one buffer each, to every rank and returns;
//                    nothing waits for them but termination detection.
//   rpc:             rank 0 calls every other rank in turn and waits for each answer.
//   audit-under-load: without faults, rank 0 waits while the other ranks flood each other, so that
//                    its hang reports start delivery audits in the middle of the traffic: they
//                    must find nothing lost.
// Without faults each prints what arrived and exits 0.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rill/rill.hpp"

namespace {
std::atomic<long> arrived{0};
// Per rank, for counts that ranks report (the ranks of the local transport share this process).
std::array<std::atomic<long>, 1024> arrived_at{};
constexpr int messages_per_rank = 2000;
}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "fire-and-forget" && mode != "rpc" && mode != "audit-under-load") {
    std::fprintf(stderr, "usage: %s fire-and-forget|rpc|audit-under-load [--rill:...]\n", argv[0]);
    return 2;
  }
  if (mode == "audit-under-load") {
    return rt.run([] {
      const int ranks = rill::rank_n();
      long sent = 0;
      for (int round = 0; round < 3; ++round) {
        std::vector<rill::future<long>> floods;
        for (int r = 1; r < ranks; ++r) {
          floods.push_back(rill::rpc(r, [] {
            // For 1.2 s, messages to the next rank but 0 (to itself with two ranks).
            const int peer = rill::rank_me() % (rill::rank_n() - 1) + 1;
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1200);
            long n = 0;
            while (std::chrono::steady_clock::now() < until) {
              for (int i = 0; i < 64; ++i, ++n) rill::am::send(peer, [] { arrived_at[rill::rank_me()].fetch_add(1); });
              rill::yield();
            }
            rill::am::flush();
            return n;
          }));
        }
        for (auto& f : floods) sent += f.get();
      }
      // Plain messages are not awaited by anything: count them until all are in.
      long in = 0;
      while (in != sent) {
        in = 0;
        for (int r = 1; r < ranks; ++r) in += rill::rpc(r, [] { return arrived_at[rill::rank_me()].load(); }).get();
      }
      std::printf("flooded: %ld, arrived: %ld\n", sent, in);
      return 0;
    });
  }
  const int code = rt.run([&] {
    const int ranks = rill::rank_n();
    long answered = 0;
    for (int i = 0; i < messages_per_rank; ++i) {
      for (int r = 1; r < ranks; ++r) {
        if (mode == "rpc") {
          answered += rill::rpc(
                          r, [](int x) { return x + 1; }, i)
                          .get() -
                      i;
        } else {
          rill::am::send(r, [] { arrived.fetch_add(1, std::memory_order_relaxed); });
          rill::am::flush();  // a buffer per message: many for the injector to choose from
        }
      }
    }
    if (mode == "rpc") std::printf("answers: %ld\n", answered);
    return 0;
  });
  if (mode == "fire-and-forget") std::printf("arrived: %ld\n", arrived.load());
  return code;
}
