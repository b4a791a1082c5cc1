// Whether an MPI launcher started this process: what `--rill:transport` defaults to (mpi when
// true, else local). Programs that run a peer or set MPI up themselves ask the same question, so
// that they and the runtime agree.
#pragma once

namespace rill {

// True when the environment shows mpirun/mpiexec (OpenMPI, MPICH/Hydra), a PMIx launcher, or
// Slurm's srun started this process.
bool launched_by_mpi_launcher();

}  // namespace rill
