// The README's SPMD example: every rank adds its rank to its right neighbour's object.
#include <rill/rill.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run_spmd([] {              // every rank runs this
    rill::dist_object<long> total(0);  // one per rank, the same id on each
    rill::finish_spmd([&] {            // returns once every rank's tasks have ended
      rill::async_at((rill::rank_me() + 1) % rill::rank_n(), [](rill::dist_id<long> t, int from) { *t += from; },
                     total.id(), rill::rank_me());
    });
    const int left = (rill::rank_me() + rill::rank_n() - 1) % rill::rank_n();
    std::printf("rank %d got %ld from rank %d\n", rill::rank_me(), *total, left);
    return *total == left ? 0 : 1;  // run_spmd returns the lowest non-zero result
  });
}
