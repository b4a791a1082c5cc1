// G1 across ranks (bench/uts_across_ranks.cpp): the uts program's --bench-ranks mode.
#pragma once

#include <string>

#include "uts/tree.hpp"

// Prints one JSON line: 2 ranks x 1 worker with async_any and stealing policy `steal` (on the mpi
// transport when `mpi`: the program runs under mpirun -np 2 and has initialised MPI), against 1
// rank x 2 workers, `reps` repetitions each. Returns non-zero when a traversal miscounted.
int bench_across_ranks(const uts::tree& tree, const uts::counts& sequential, const std::string& name,
                       const std::string& flags_text, const std::string& steal, int reps, bool mpi);
