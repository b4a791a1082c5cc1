// The example of docs/active-messages.md (rill::am::send_inline) and docs/scheduler.md (the progress
// thread): every rank but 0 estimates pi by sampling, in a long task that yields only every few
// million samples, while rank 0 asks each of them how far it got. The questions and answers are
// sent with send_inline: with --rill:progress=thread a busy rank's progress thread answers at once,
// with --rill:progress=worker (the default) the answer waits for the task's next yield.
//
//   build/release/examples/rill-progress --rill:ranks=4 --rill:progress=thread
#include <rill/rill.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace {

// On each computing rank, read by the inline handler beside the task: atomics.
std::atomic<std::uint64_t> g_samples{0};
std::atomic<bool> g_computing{false};
std::atomic<bool> g_stop{false};

// On rank 0.
std::atomic<int> g_started{0};
std::atomic<int> g_answers_while_computing{0};
std::atomic<std::uint64_t> g_hits{0}, g_drawn{0};
rill::latch* g_round = nullptr;

void estimate_pi() {
  g_computing = true;
  rill::am::send_inline(0, [] { g_started.fetch_add(1); });
  rill::am::flush();
  std::mt19937_64 rng(static_cast<std::uint64_t>(rill::rank_me()));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uint64_t hits = 0, n = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 1 << 22; ++i, ++n) {
      const double x = u(rng), y = u(rng);
      hits += x * x + y * y <= 1.0;
      if ((n & 1023) == 0) g_samples.store(n, std::memory_order_relaxed);
    }
    rill::yield();  // rare: a worker polls the network only here
  }
  g_computing = false;
  // A task of the same finish scope (a plain message would not be waited for by rank 0's finish).
  rill::async_at(
      0,
      [](std::uint64_t h, std::uint64_t d) {
        g_hits.fetch_add(h);
        g_drawn.fetch_add(d);
      },
      hits, n);
}

}  // namespace

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([]() -> int {
    const int n = rill::rank_n();
    if (n < 2) {
      std::puts("run with at least 2 ranks (--rill:ranks=4, or mpirun -np 4)");
      return 1;
    }
    std::vector<double> waits_us;
    rill::finish([&] {
      for (int r = 1; r < n; ++r) rill::async_at(r, estimate_pi);
      while (g_started.load() < n - 1) rill::yield();
      for (int round = 0; round < 3; ++round) {
        rill::latch answered(n - 1);
        g_round = &answered;
        const auto t0 = std::chrono::steady_clock::now();
        for (int r = 1; r < n; ++r)
          rill::am::send_inline(r, [] {
            // On rank r, beside its task: read what the task publishes, answer at once.
            rill::am::send_inline(
                0,
                [](int from, std::uint64_t samples, bool computing) {
                  std::printf("round answer: rank %d has drawn %llu samples\n", from,
                              static_cast<unsigned long long>(samples));
                  if (computing) g_answers_while_computing.fetch_add(1);
                  g_round->count_down();
                },
                rill::rank_me(), g_samples.load(), g_computing.load());
            rill::am::flush();
          });
        rill::am::flush();
        answered.wait();
        waits_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      for (int r = 1; r < n; ++r) rill::am::send_inline(r, [] { g_stop = true; });
      rill::am::flush();
    });
    std::sort(waits_us.begin(), waits_us.end());
    std::printf("%d of %d answers came while their rank computed (median wait %.0f us)\n",
                g_answers_while_computing.load(), 3 * (n - 1), waits_us[waits_us.size() / 2]);
    std::printf("pi ~ %.4f from %llu samples\n", 4.0 * static_cast<double>(g_hits) / static_cast<double>(g_drawn),
                static_cast<unsigned long long>(g_drawn.load()));
    return 0;
  });
}
