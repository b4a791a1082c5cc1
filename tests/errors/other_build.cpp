// A second Rill program: started beside rill-tree under one mpirun, the start-up check must see
// that the ranks run different builds and stop every rank with a clear message.
#include "rill/rill.hpp"

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    rill::am::send(
        rill::rank_n() - 1, [](long x) { (void)x; }, 42L);
  });
}
