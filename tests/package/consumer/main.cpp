// Uses the installed package: run with --rill:ranks=2 (docs/getting-started.md shows it).
#include <rill/rill.hpp>

int main(int argc, char** argv) {
  rill::runtime rt(argc, argv);  // consumes the --rill:* flags
  return rt.run([] {             // the top-level task, on rank 0; the other ranks serve
    return rill::rank_n() > 0 ? 0 : 1;
  });
}
