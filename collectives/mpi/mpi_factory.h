// CreateCommunicator: one entry point for programs started by mpirun/srun that picks a backend
// by name — "in-process", "shm", "mpi", "hierarchical", "nccl", or "auto" (in-process for one
// process, shm on one host, hierarchical across hosts).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>

#include "collectives/communicator.h"

namespace troupe {

// Collective over `comm` (except for "in-process"). `job_token` (MakeJobToken) names the
// shared-memory segments; it must be the same on every rank.
Result<std::unique_ptr<Communicator>> CreateCommunicator(std::string_view backend,
                                                         ProcessGroup group,
                                                         CollectiveOptions options, MPI_Comm comm,
                                                         const std::string& job_token);

}  // namespace troupe
