// How many cores this process may use, and how many intra-op threads it should run by default.
// A process may use the CPUs in its affinity mask (what a launcher's binding leaves it), capped
// by a cgroup CPU quota (containers, Slurm's cgroups). When no launcher bound it, the processes
// of one host share those cores, so each takes its share; when one did, the mask already is the
// share. Threads never change results: kernels split work by problem size, not thread count.
#pragma once

#include <string>

namespace troupe {

struct CpuBudget {
  int online = 1;    // CPUs the machine has online
  int affinity = 1;  // CPUs in this process's affinity mask
  double quota = 0;  // cgroup CPU quota in cores; 0 when there is none
};

// Reads sched_getaffinity, sysconf and the cgroup v2 (cpu.max) or v1 (cfs_quota_us) quota.
CpuBudget ReadCpuBudget();

struct IntraOpChoice {
  int threads = 1;  // threads that run one process's kernels, the calling thread included
  std::string why;  // e.g. "2 usable cores / 2 processes on this host"
};

// `configured` > 0 wins; else `env_threads` (TROUPE_NUM_THREADS) when > 0; else the process's
// share of the usable cores (see above) less the cores its other replicas keep busy: each of a
// process's `replicas` runs on a thread of its own and computes there too, so the pool adds
// share - replicas workers to them (measured on 2 cores, LeNet 1x2: 1 thread 36k examples/s,
// 2 threads 32k, 3 threads 29k). At least 1.
IntraOpChoice ChooseIntraOpThreads(const CpuBudget& budget, int local_processes, int replicas,
                                   int configured, int env_threads);

}  // namespace troupe
