#include <cstdlib>
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

}  // namespace rill
