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

Result<std::vector<std::string>> ExpandSlurmNodeList(const std::string& list) {
  std::vector<std::string> hosts;
  size_t i = 0;
  while (i < list.size()) {
    size_t name_end = list.find_first_of(",[", i);
    std::string prefix = list.substr(i, name_end - i);
    if (name_end == std::string::npos || list[name_end] == ',') {
      if (!prefix.empty()) hosts.push_back(prefix);
      i = name_end == std::string::npos ? list.size() : name_end + 1;
      continue;
    }
    size_t close = list.find(']', name_end);
    if (close == std::string::npos) {
      return InvalidArgumentError("Slurm node list '" + list + "' has an unclosed '['");
    }
    std::string ranges = list.substr(name_end + 1, close - name_end - 1);
    size_t r = 0;
    while (r <= ranges.size()) {
      size_t comma = ranges.find(',', r);
      std::string part =
          ranges.substr(r, comma == std::string::npos ? std::string::npos : comma - r);
      size_t dash = part.find('-');
      std::string lo = part.substr(0, dash);
      std::string hi = dash == std::string::npos ? lo : part.substr(dash + 1);
      if (lo.empty() || hi.empty() || lo.find_first_not_of("0123456789") != std::string::npos ||
          hi.find_first_not_of("0123456789") != std::string::npos) {
        return InvalidArgumentError("Slurm node list '" + list + "' has a bad range '" + part +
                                    "'");
      }
      long a = std::stol(lo), b = std::stol(hi);
      if (b < a || b - a > 100000) {
        return InvalidArgumentError("Slurm node list '" + list + "' has a bad range '" + part +
                                    "'");
      }
      for (long n = a; n <= b; ++n) {
        std::string num = std::to_string(n);
        if (num.size() < lo.size()) num.insert(0, lo.size() - num.size(), '0');  // keep padding
        hosts.push_back(prefix + num);
      }
      if (comma == std::string::npos) break;
      r = comma + 1;
    }
    i = close + 1;
    if (i < list.size() && list[i] == ',') ++i;
  }
  return hosts;
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
