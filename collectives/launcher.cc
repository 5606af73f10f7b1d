#include "collectives/launcher.h"

#include <cerrno>
#include <cstdlib>

namespace troupe {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<int> EnvInt(const EnvLookup& env, const std::string& name) {
  std::optional<std::string> v = env(name);
  if (!v) return NotFoundError(name + " is not set");
  errno = 0;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || n < 0 || n > (1 << 24)) {
    return InvalidArgumentError(name + "='" + *v + "' is not a valid non-negative integer");
  }
  return static_cast<int>(n);
}

Result<ProcessPlace> DetectProcessPlace(const EnvLookup& env) {
  ProcessPlace out;
  if (env("OMPI_COMM_WORLD_RANK")) {
    TROUPE_ASSIGN_OR_RETURN(out.rank, EnvInt(env, "OMPI_COMM_WORLD_RANK"));
    TROUPE_ASSIGN_OR_RETURN(out.world_size, EnvInt(env, "OMPI_COMM_WORLD_SIZE"));
    TROUPE_ASSIGN_OR_RETURN(out.local_rank, EnvInt(env, "OMPI_COMM_WORLD_LOCAL_RANK"));
    TROUPE_ASSIGN_OR_RETURN(out.local_size, EnvInt(env, "OMPI_COMM_WORLD_LOCAL_SIZE"));
    out.launcher = "mpirun";
    out.under_mpi = true;
    out.reasons.push_back("rank/size from OMPI_COMM_WORLD_* (mpirun)");
    if (env("SLURM_PROCID")) {
      out.reasons.push_back(
          "ignoring SLURM_PROCID: under mpirun every rank inherits the batch "
          "step's value");
    }
  } else if (env("PMIX_RANK") && env("SLURM_NTASKS")) {
    TROUPE_ASSIGN_OR_RETURN(out.rank, EnvInt(env, "PMIX_RANK"));
    TROUPE_ASSIGN_OR_RETURN(out.world_size, EnvInt(env, "SLURM_NTASKS"));
    out.local_rank = EnvInt(env, "SLURM_LOCALID").value_or(0);
    out.local_size = EnvInt(env, "SLURM_NTASKS_PER_NODE").value_or(out.world_size);
    out.launcher = "srun (pmix)";
    out.under_mpi = true;
    out.reasons.push_back("rank from PMIX_RANK, size from SLURM_NTASKS (srun --mpi=pmix)");
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS") && env("SLURM_STEP_ID")) {
    TROUPE_ASSIGN_OR_RETURN(out.rank, EnvInt(env, "SLURM_PROCID"));
    TROUPE_ASSIGN_OR_RETURN(out.world_size, EnvInt(env, "SLURM_NTASKS"));
    out.local_rank = EnvInt(env, "SLURM_LOCALID").value_or(0);
    out.local_size = EnvInt(env, "SLURM_NTASKS_PER_NODE").value_or(1);
    out.launcher = "slurm";
    out.reasons.push_back("rank/size from SLURM_PROCID/SLURM_NTASKS (srun without MPI)");
  } else {
    out.reasons.push_back("no MPI or Slurm variables: single process");
  }
  if (out.rank >= out.world_size) {
    return InvalidArgumentError(out.launcher + " gave rank " + std::to_string(out.rank) +
                                " >= world size " + std::to_string(out.world_size));
  }
  return out;
}

}  // namespace troupe
