#include "core/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/env.h"

namespace troupe {
namespace {

// cgroup v2: "max 100000" or "<quota> <period>"; v1: cfs_quota_us (-1 = none) and period.
// A kernel file's text ("" when it is not there).
std::istringstream KernelFile(const std::string& path) {
  return std::istringstream(ReadFileToString(path).value_or(""));
}

double CgroupQuota() {
  std::istringstream v2 = KernelFile("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (v2 >> quota >> period) {
    if (quota == "max" || period <= 0) return 0;
    return std::stod(quota) / period;
  }
  std::istringstream q = KernelFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::istringstream p = KernelFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota_us = 0;
  if (q >> quota_us && p >> period && quota_us > 0 && period > 0) return quota_us / period;
  return 0;
}

// The cores this process may use: its affinity mask, capped by a cgroup quota, divided among
// the host's processes unless a launcher bound each to its own. `why` says which applied.
int CoreShare(const CpuBudget& budget, int local_processes, std::string* why) {
  int usable = budget.affinity;
  *why = std::to_string(budget.affinity) + " cores in the affinity mask";
  if (budget.quota > 0 && std::ceil(budget.quota) < usable) {
    usable = std::max(1, static_cast<int>(std::ceil(budget.quota)));
    std::ostringstream q;
    q << "cgroup quota of " << budget.quota << " cores";
    *why = q.str();
  }
  const bool bound = budget.affinity < budget.online;
  if (!bound && local_processes > 1) {
    *why += " / " + std::to_string(local_processes) + " processes on this host";
    return std::max(1, usable / local_processes);
  }
  return usable;
}

}  // namespace

CpuBudget ReadCpuBudget() {
  CpuBudget b;
  b.online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  b.affinity =
      sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(1, CPU_COUNT(&set)) : b.online;
  try {
    b.quota = CgroupQuota();
  } catch (const std::exception&) {
    b.quota = 0;  // an unreadable quota file means no quota we can honour
  }
  return b;
}

IntraOpChoice ChooseIntraOpThreads(const CpuBudget& budget, int local_processes, int replicas,
                                   int configured, int env_threads) {
  if (configured > 0) return {configured, "train.intra_op_threads"};
  if (env_threads > 0) return {env_threads, "TROUPE_NUM_THREADS"};
  std::string why;
  const int share = CoreShare(budget, local_processes, &why);
  if (replicas <= 1) return {std::max(1, share), why};
  why += ", less the threads of " + std::to_string(replicas - 1) +
         " other replica(s) and a core for input and messages";
  return {std::max(1, share - replicas), why};
}

ReplicaChoice ChooseReplicasPerProcess(const CpuBudget& budget, int local_processes,
                                       int64_t world_size, int64_t global_batch) {
  constexpr int64_t kMinReplicaBatch = 2;
  std::string why;
  const int share = CoreShare(budget, local_processes, &why);
  world_size = std::max<int64_t>(1, world_size);
  // Measured best: 2 replicas on 2 cores (1 thread each), 8 on 16 (2 threads each): one
  // replica per core while cores are few, one per two cores beyond.
  const int most = share <= 3 ? std::min(share, 2) : share / 2;
  for (int r = most; r > 1; --r) {
    const int64_t replicas = world_size * r;
    if (global_batch % replicas == 0 && global_batch / replicas >= kMinReplicaBatch) {
      return {r, why + ": " + std::to_string(r) + " replicas of " +
                     std::to_string(global_batch / replicas) + " examples"};
    }
  }
  return {1, why + ": 1 replica"};
}

}  // namespace troupe
