#include "collectives/mpi/mpi_factory.h"

#include "collectives/in_process_communicator.h"
#include "collectives/mpi/hierarchical_communicator.h"
#include "collectives/mpi/mpi_communicator.h"
#include "collectives/shm_communicator.h"
#include "troupe/build_info.h"
#if defined(TROUPE_COLLECTIVES_WITH_NCCL)
#include "collectives/mpi/nccl_mpi.h"
#endif

namespace troupe {

Result<std::unique_ptr<Communicator>> CreateCommunicator(std::string_view backend,
                                                         ProcessGroup group,
                                                         CollectiveOptions options, MPI_Comm comm,
                                                         const std::string& job_token) {
  TROUPE_RETURN_IF_ERROR(group.Validate());
  std::string name(backend);
  if (name == "auto") {
    name = group.world_size == 1 ? "in-process" : group.num_hosts() == 1 ? "shm" : "hierarchical";
  }
  const std::string segment = "/troupe-" + job_token;
  if (name == "in-process") return InProcessCommunicator::Create(std::move(group), options);
  if (name == "shm") return ShmCommunicator::Create(std::move(group), options, segment);
  if (name == "mpi") return MpiCommunicator::Create(std::move(group), options, comm);
  if (name == "hierarchical") {
    return HierarchicalCommunicator::Create(std::move(group), options, comm, segment);
  }
  if (name == "nccl") {
#if defined(TROUPE_COLLECTIVES_WITH_NCCL)
    return CreateNcclCommunicatorWithMpi(std::move(group), options, comm);
#else
    return UnimplementedError("backend 'nccl' was not built: no NCCL under the CUDA toolkit");
#endif
  }
  return InvalidArgumentError("unknown collectives backend '" + std::string(backend) +
                              "'; use auto, in-process, shm, mpi, hierarchical or nccl");
}

}  // namespace troupe
