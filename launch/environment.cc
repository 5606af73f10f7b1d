#include "launch/environment.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "collectives/launcher.h"
#include "core/host.h"

namespace troupe::launch {
namespace {

Status CheckFlag(const char* flag, const std::optional<int>& value, int detected,
                 const std::string& source) {
  if (value && *value != detected) {
    return InvalidArgumentError("flag --" + std::string(flag) + "=" + std::to_string(*value) +
                                " disagrees with " + source + "=" + std::to_string(detected) +
                                "; drop the flag or fix the launch line");
  }
  return Status::OK();
}

}  // namespace

Result<std::pair<std::string, int>> ParseHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return InvalidArgumentError("coordinator address '" + text + "' is not host:port");
  }
  char* end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535) {
    return InvalidArgumentError("coordinator address '" + text + "' has no valid port (1-65535)");
  }
  return std::make_pair(text.substr(0, colon), static_cast<int>(port));
}

Result<LaunchEnvironment> DetectEnvironment(const LaunchFlags& flags, const EnvLookup& env) {
  LaunchEnvironment out;
  out.hostname = Hostname();
  TROUPE_ASSIGN_OR_RETURN(ProcessPlace place, DetectProcessPlace(env));
  out.rank = place.rank;
  out.world_size = place.world_size;
  out.local_rank = place.local_rank;
  out.local_size = place.local_size;
  out.launcher = place.launcher;
  out.under_mpi = place.under_mpi;
  out.reasons = std::move(place.reasons);

  bool detected = out.launcher != "single process";
  std::string source = out.launcher + "'s environment";
  if (detected) {
    TROUPE_RETURN_IF_ERROR(CheckFlag("rank", flags.rank, out.rank, source + " rank"));
    TROUPE_RETURN_IF_ERROR(
        CheckFlag("world-size", flags.world_size, out.world_size, source + " world size"));
    TROUPE_RETURN_IF_ERROR(
        CheckFlag("local-rank", flags.local_rank, out.local_rank, source + " local rank"));
  } else if (flags.rank || flags.world_size) {
    out.rank = flags.rank.value_or(0);
    out.world_size = flags.world_size.value_or(1);
    out.local_rank = flags.local_rank.value_or(out.rank);
    out.local_size = out.world_size;
    out.launcher = "flags";
    out.reasons.back() = "rank/size from --rank/--world-size";
    if (out.rank < 0 || out.world_size < 1 || out.rank >= out.world_size) {
      return InvalidArgumentError("--rank " + std::to_string(out.rank) + " must be in [0, " +
                                  "--world-size " + std::to_string(out.world_size) + ")");
    }
  }

  if (flags.coordinator) {
    TROUPE_RETURN_IF_ERROR(ParseHostPort(*flags.coordinator).status());
    out.coordinator = *flags.coordinator;
    out.reasons.push_back("coordinator from --coordinator");
  } else if (auto c = env("TROUPE_COORDINATOR")) {
    TROUPE_RETURN_IF_ERROR(ParseHostPort(*c).status().WithContext("TROUPE_COORDINATOR"));
    out.coordinator = *c;
    out.reasons.push_back("coordinator from TROUPE_COORDINATOR");
  } else if (out.launcher == "slurm" && out.world_size > 1) {
    // The allocation's first node name is no address: hosts of a cluster (containers, pods,
    // namespaces) need not resolve each other's names, and rank 0 alone knows which of its
    // addresses the others reach. Its choice travels over MPI, which the collectives need
    // anyway, so plain srun cannot run a multi-process job.
    return InvalidArgumentError(
        "srun started " + std::to_string(out.world_size) +
        " tasks without MPI (SLURM_PROCID is set, PMIX_RANK is not): Troupe's processes "
        "share gradients and the coordinator's address over MPI; launch with `srun "
        "--mpi=pmix` or mpirun inside the allocation (launch/slurm/train.sbatch does), and "
        "pick the address rank 0 advertises with control.advertise_address or "
        "control.advertise_interface if its default is not reachable from every node");
  } else if (out.world_size > 1 && out.under_mpi) {
    out.reasons.push_back("coordinator address shared by rank 0 over MPI broadcast");
  } else if (out.world_size > 1) {
    return InvalidArgumentError(
        "multi-process job without a coordinator address: pass "
        "--coordinator host:port or set TROUPE_COORDINATOR");
  }
  return out;
}

}  // namespace troupe::launch
