// Uses the installed package: run with --rill:ranks=2, exits 0 when the runtime saw both ranks.
#include <rill/rill.hpp>

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);
  return rt.run([] { return rill::rank_n() == 2 ? 0 : 1; });
}
