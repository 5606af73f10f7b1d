// JobProcesses: the processes of one training job as the launcher started them (one process,
// or mpirun / `srun --mpi=pmix`), with MPI hidden behind it. It does the collective start-up
// steps a job needs before its control plane exists (share a string from rank 0, agree on a
// job token, learn the topology) and builds the communicator a job reduces with. Every call
// is collective: all ranks make it, in the same order.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collectives/communicator.h"
#include "collectives/process_group.h"
#include "core/device.h"
#include "core/result.h"

namespace troupe {

class JobProcesses {
 public:
  // world_size > 1 needs `under_mpi` and a build with MPI (FailedPrecondition saying so
  // otherwise); MPI is initialised here and finalised when the object goes.
  static Result<std::unique_ptr<JobProcesses>> Start(int world_size, bool under_mpi);
  ~JobProcesses();
  JobProcesses(const JobProcesses&) = delete;
  JobProcesses& operator=(const JobProcesses&) = delete;

  int world_size() const { return world_size_; }

  // Rank 0's `value` reaches every rank (a no-op for one process).
  Status BroadcastFromRank0(std::string* value);
  // `given` when it is not empty (every rank must then pass the same), else a random token
  // rank 0 draws and shares; names the job's shared-memory segments and control messages.
  Result<std::string> AgreeJobToken(const std::string& given);
  // Ranks, hosts and `replicas_per_process` consecutive global replica ids per rank.
  Result<ProcessGroup> Group(int replicas_per_process);

  // backend "auto": in-process for one process, shared memory on one host, shared memory and
  // MPI across hosts; gradients are reduced on the host. "nccl": NCCL on `device` (one GPU
  // replica per process). `job_token` must be the one AgreeJobToken gave.
  Result<std::unique_ptr<Communicator>> CreateCommunicator(const std::string& backend,
                                                           const ProcessGroup& group,
                                                           const CollectiveOptions& options,
                                                           const std::string& job_token,
                                                           Device device);

 private:
  JobProcesses(int world_size, bool owns_mpi) : world_size_(world_size), owns_mpi_(owns_mpi) {}

  int world_size_;
  bool owns_mpi_;
};

// A random job token: kJobTokenLength hex digits from the OS's CSPRNG (getrandom);
// Unavailable when no randomness can be read.
inline constexpr size_t kJobTokenLength = 32;
Result<std::string> NewJobToken();

}  // namespace troupe
