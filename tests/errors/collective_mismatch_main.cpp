// Rank 0 calls one collective while the others call another (argv[1] says which pair): under
// mpirun the program must stop with exit code 3 naming both calls, not exit 0 or hang.
// reduce-operators: the same allreduce with two operators; this program is built in debug mode
// (NDEBUG unset), in which collectives compare their operators too.
// roots-both-wait: every rank waits for another's broadcast, so no message ever meets a mismatch;
// the run hangs, and each rank's hang report must name the collective it waits in.
#include <cstdio>
#include <string>

#include "rill/rill.hpp"

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  const std::string pair = argc > 1 ? argv[1] : "";
  const auto plus = [](long a, long b) { return a + b; };
  return rt.run_spmd([&] {
    const bool first = rill::rank_me() == 0;
    rill::team w = rill::team::world();
    if (pair == "broadcast-reduce") {
      if (first)
        std::printf("broadcast gave %ld\n", w.broadcast(7L, 0).get());
      else
        std::printf("reduce gave %ld\n", w.reduce(1L, plus, 0).get());
    } else if (pair == "allreduce-barrier") {
      if (first)
        std::printf("allreduce gave %ld\n", w.allreduce(1L, plus).get());
      else
        w.barrier().wait();
    } else if (pair == "reduce-operators") {
      // The same call with another operator: checked in a debug build of the program (this one).
      if (first)
        std::printf("allreduce gave %ld\n", w.allreduce(2L, [](long a, long b) { return a + b; }).get());
      else
        std::printf("allreduce gave %ld\n", w.allreduce(2L, [](long a, long b) { return a * b; }).get());
    } else if (pair == "roots-both-wait") {
      std::printf("broadcast gave %ld\n", w.broadcast(7L, first ? 1 : 0).get());
    } else {
      std::fprintf(stderr, "usage: %s broadcast-reduce|allreduce-barrier|reduce-operators|roots-both-wait\n", argv[0]);
      return 2;
    }
    return 0;
  });
}
