// Under mpirun, rank 1 runs a handler that follows an address made on rank 0 (what a lambda that
// captured a local by reference ships): the run must end with exit code 3 and a line blaming the
// captured pointer, not a bare SIGSEGV.
#include <cstdint>

#include "rill/rill.hpp"

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] {
    const std::uintptr_t made_on_rank_0 = 0x10;  // mapped nowhere, on any rank
    rill::am::send(
        rill::rank_n() - 1, [](std::uintptr_t p) { (void)*reinterpret_cast<volatile int*>(p); }, made_on_rank_0);
    rill::am::flush();
    rill::team::world().barrier().wait();
    return 0;
  });
}
