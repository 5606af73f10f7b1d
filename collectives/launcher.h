// Where the launcher put this process: its rank, the world size and its rank on the host, read
// from the variables mpirun (OMPI_COMM_WORLD_*), `srun --mpi=pmix` (PMIX_RANK) or plain srun
// (SLURM_PROCID) set; a single process otherwise. MPI's variables win over Slurm's: under
// mpirun inside a Slurm job every rank inherits the batch step's SLURM_PROCID.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace troupe {

// Reads a variable (getenv in processes; tests pass a map).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

struct ProcessPlace {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::string launcher = "single process";  // "mpirun", "srun (pmix)", "slurm"
  bool under_mpi = false;                   // MPI can be initialised (mpirun, srun --mpi=pmix)
  std::vector<std::string> reasons;         // where each value came from, for `troupe env`
};

// InvalidArgument naming the variable when one is not a non-negative integer, or when the
// rank is not below the world size.
Result<ProcessPlace> DetectProcessPlace(const EnvLookup& env);

// A non-negative integer variable: NotFound when unset, InvalidArgument naming it when bad.
Result<int> EnvInt(const EnvLookup& env, const std::string& name);

}  // namespace troupe
