#include "transport/launcher.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "rill/launcher.hpp"

namespace rill {

bool launched_by_mpi_launcher() {
  // OpenMPI, MPICH/Hydra (PMI), PMIx-based launchers, and Slurm's srun.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

namespace detail {

launcher_count launcher_processes() {
  struct known {
    const char* variable;
    const char* launcher;
  };
  for (const known k : {known{"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"},
                        known{"PMI_SIZE", "a PMI launcher such as MPICH's mpirun.mpich or Hydra"}}) {
    const char* v = std::getenv(k.variable);
    if (v == nullptr) continue;
    int n = 0;
    const char* end = v + std::strlen(v);
    if (std::from_chars(v, end, n).ptr == end && n > 0) return {n, k.variable, k.launcher};
  }
  return {};
}

}  // namespace detail

}  // namespace rill
