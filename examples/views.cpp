// The example of docs/active-messages.md: every rank sends rank 0 its samples as a rill::view, with
// send_zero_copy: the network reads them from the sender's vector, and rank 0's handler reads them
// where they arrived (no vector is built on either side). Rank 0 adds them up.
#include <rill/rill.hpp>

#include <cstdio>
#include <vector>

double total = 0;            // on rank 0: the sum of every sample received
rill::latch* arrived;        // on rank 0: one count per sending rank
constexpr int count = 8192;  // 64 KiB of doubles: above --rill:large-bytes, so a buffer of its own

void send_samples() {
  std::vector<double> samples(count, 0.5 * (rill::rank_me() + 1));
  // `samples` must stay as it is until the returned event triggers (with am::send it could change
  // as soon as send returned: the elements would be copied into the message).
  const rill::event sent = rill::am::send_zero_copy(
      0,
      [](rill::view<double> v) {
        for (double x : v) total += x;  // reads the received buffer in place
        arrived->count_down();
      },
      rill::view(samples));
  sent.wait();  // the fiber waits; the worker runs other tasks meanwhile
}

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const int n = rill::rank_n();
    rill::latch all(n);
    arrived = &all;
    for (int r = 0; r < n; ++r) rill::am::send(r, send_samples);
    all.wait();
    std::printf("rank 0 summed the samples of %d ranks: %.1f (expected %.1f)\n", n, total,
                0.5 * count * n * (n + 1) / 2);
    return 0;
  });
}
