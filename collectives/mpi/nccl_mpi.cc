#include "collectives/mpi/nccl_mpi.h"

namespace troupe {

Result<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicatorWithMpi(ProcessGroup group,
                                                                        CollectiveOptions options,
                                                                        MPI_Comm comm, int device) {
  NcclId id;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  Status made;
  if (rank == 0) {
    auto fresh = NcclCommunicator::NewUniqueId();
    if (fresh.ok()) {
      id = *fresh;
    } else {
      made = fresh.status();
    }
  }
  int ok = made.ok() ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) return made.ok() ? UnavailableError("rank 0 could not create an NCCL id") : made;
  MPI_Bcast(id.bytes.data(), static_cast<int>(id.bytes.size()), MPI_BYTE, 0, comm);
  return NcclCommunicator::Create(std::move(group), options, id, device);
}

}  // namespace troupe
