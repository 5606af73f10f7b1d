// An NCCL communicator whose unique id rank 0 makes and broadcasts over MPI (internal to
// collectives/, like the rest of mpi/: built when both MPI and NCCL are).
#pragma once

#include <mpi.h>

#include <memory>

#include "collectives/nccl_communicator.h"

namespace troupe {

// Collective over `comm`: every rank learns whether rank 0 could make the id, so none waits
// for one that never comes.
Result<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicatorWithMpi(ProcessGroup group,
                                                                        CollectiveOptions options,
                                                                        MPI_Comm comm,
                                                                        int device = -1);

}  // namespace troupe
