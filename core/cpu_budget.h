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
// share of the usable cores (see above), for one replica all of it. Each of several replicas
// runs on a thread of its own and computes there too, so the pool adds share - replicas - 1
// workers to them, and one core stays free for the input pipeline and the replicas' messages
// (measured on a 16-core Xeon, 8 replicas: LeNet 35.1k examples/s with 8 threads against
// 31.1k with 9, ResNet-20 equal; on 2 cores, LeNet 1x2: 1 thread 36k, 2 threads 32k). At
// least 1.
IntraOpChoice ChooseIntraOpThreads(const CpuBudget& budget, int local_processes, int replicas,
                                   int configured, int env_threads);

struct ReplicaChoice {
  int replicas = 1;  // replicas each process runs
  std::string why;   // e.g. "16 cores in the affinity mask: 8 replicas of 16 examples"
};

// train.replicas_per_process = 0 ("auto") on CPUs: one replica per core of the process's
// share (see above) up to 2, one per two cores beyond, lowered until the job's replicas
// (world_size x this) divide `global_batch` into per-replica batches of at least 2. One
// replica's kernels do not keep many cores busy (small ops, a synchronisation per op), while
// each replica adds a thread that computes on its own slice of the batch. Measured with
// bench/replicas_threads.py: on a 16-core Xeon, 8 replicas ran ResNet-20 (batch 128) at
// 3480-3860 examples/s against 2680-2790 for 1 replica (16 threads) and 2720 for 16 replicas;
// on 2 cores, 2 replicas with 1 thread and 1 with 2 are within noise of each other.
ReplicaChoice ChooseReplicasPerProcess(const CpuBudget& budget, int local_processes,
                                       int64_t world_size, int64_t global_batch);

}  // namespace troupe
