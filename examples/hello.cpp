// clang-format off: kept exactly as the README shows it.
// The README's example: remote calls that answer back, a local fan-out of tasks, and latches.
#include <atomic>
#include <cstdio>
#include <string>

#include "rill/rill.hpp"

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);  // --rill:ranks=4 --rill:workers=2 --rill:transport=local|mpi
  return rt.run([] {             // the top-level task, on rank 0; the other ranks serve
    const int n = rill::rank_n();
    std::string replies[64];
    rill::latch answered(n);
    for (int r = 0; r < n && r < 64; ++r) {
      // Ship a lambda and its arguments to rank r; no registration needed.
      rill::am::send(r, [](std::string* out, rill::latch* done, std::string greeting) {
        // Answer the sender; the pointers are used only back on rank 0, where they are valid.
        rill::am::send(rill::am::sender(), [](std::string* o, rill::latch* d, std::string text) {
          *o = std::move(text);
          d->count_down();
        }, out + rill::rank_me(), done, greeting + " from rank " + std::to_string(rill::rank_me()));
      }, replies, &answered, std::string("hello"));
    }
    std::atomic<long> sum{0};
    rill::latch computed(1000);
    for (long i = 0; i < 1000; ++i) rill::spawn([i, &sum, &computed] { sum += i * i; computed.count_down(); });
    answered.wait();  // suspends this task's fiber; the worker runs other tasks meanwhile
    computed.wait();
    for (int r = 0; r < n && r < 64; ++r) std::printf("%s\n", replies[r].c_str());
    std::printf("sum of squares below 1000: %ld\n", sum.load());
    return 0;
  });
}
