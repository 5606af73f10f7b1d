// Launch environment detection: which rank this process is, how many there are, its rank on
// the host (collectives/launcher.h reads the launcher's variables), and where the
// coordinator listens. Precedence: flags > MPI/PMIx (mpirun, srun --mpi=pmix) > Slurm >
// single process.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/launcher.h"
#include "core/result.h"

namespace troupe::launch {

struct LaunchFlags {
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<int> local_rank;
  std::optional<std::string> coordinator;  // host:port
};

struct LaunchEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  std::string hostname;
  std::string launcher;              // "flags", "mpirun", "srun (pmix)", "slurm", "single process"
  std::string coordinator;           // host:port; empty: rank 0 picks a port and shares it over MPI
  std::vector<std::string> reasons;  // why each value was chosen, for `troupe env`
  bool under_mpi = false;            // MPI can be initialised (mpirun or srun --mpi=pmix)
};

using ::troupe::EnvLookup;
using ::troupe::ProcessEnv;

// Fails with InvalidArgument when flags disagree with the launcher's variables, naming both.
Result<LaunchEnvironment> DetectEnvironment(const LaunchFlags& flags,
                                            const EnvLookup& env = ProcessEnv());

// Parses "host:port" (port 1..65535).
Result<std::pair<std::string, int>> ParseHostPort(const std::string& text);

}  // namespace troupe::launch
