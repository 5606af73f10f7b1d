#include "collectives/job_processes.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "collectives/in_process_communicator.h"
#include "troupe/build_info.h"
#if TROUPE_HAVE_MPI
#include <mpi.h>

#include "collectives/mpi/mpi_bootstrap.h"
#include "collectives/mpi/mpi_factory.h"
#endif
#if TROUPE_COLLECTIVES_WITH_NCCL
#include "collectives/nccl_communicator.h"
#if TROUPE_HAVE_MPI
#include "collectives/mpi/nccl_mpi.h"
#endif
#endif

namespace troupe {
namespace {

Result<std::unique_ptr<Communicator>> Nccl(const ProcessGroup& group,
                                           const CollectiveOptions& options, Device device,
                                           bool over_mpi) {
#if TROUPE_COLLECTIVES_WITH_NCCL
  if (over_mpi) {
#if TROUPE_HAVE_MPI
    return CreateNcclCommunicatorWithMpi(group, options, MPI_COMM_WORLD, device.index);
#else
    return FailedPreconditionError("collectives.backend = \"nccl\" across processes needs MPI");
#endif
  }
  // One process: the unique id needs no exchange.
  TROUPE_ASSIGN_OR_RETURN(NcclId id, NcclCommunicator::NewUniqueId());
  return NcclCommunicator::Create(group, options, id, device.index);
#else
  (void)group, (void)options, (void)device, (void)over_mpi;
  return FailedPreconditionError(
      "collectives.backend = \"nccl\": this troupe was built without NCCL; use backend = "
      "\"auto\"");
#endif
}

}  // namespace

Result<std::string> NewJobToken() {
  unsigned char bytes[kJobTokenLength / 2];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return UnavailableError(std::string("cannot draw a job token: getrandom: ") +
                              std::strerror(errno) + "; set TROUPE_JOB_TOKEN to a random string");
    }
    got += static_cast<size_t>(n);
  }
  static const char* hex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

Result<std::unique_ptr<JobProcesses>> JobProcesses::Start(int world_size, bool under_mpi) {
  if (world_size <= 1) return std::unique_ptr<JobProcesses>(new JobProcesses(1, false));
#if TROUPE_HAVE_MPI
  if (!under_mpi) {
    return FailedPreconditionError(
        "multi-process jobs run under mpirun or `srun --mpi=pmix` (collectives use MPI)");
  }
  TROUPE_RETURN_IF_ERROR(InitMpi(nullptr, nullptr));
  return std::unique_ptr<JobProcesses>(new JobProcesses(world_size, true));
#else
  (void)under_mpi;
  return FailedPreconditionError("this build has no MPI; multi-process training needs it");
#endif
}

JobProcesses::~JobProcesses() {
#if TROUPE_HAVE_MPI
  if (owns_mpi_) FinalizeMpi();
#endif
}

Status JobProcesses::BroadcastFromRank0(std::string* value) {
  if (world_size_ == 1) return Status::OK();
#if TROUPE_HAVE_MPI
  int size = static_cast<int>(value->size());
  if (MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return UnavailableError("MPI_Bcast from rank 0 failed");
  }
  value->resize(static_cast<size_t>(size));
  if (MPI_Bcast(value->data(), size, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return UnavailableError("MPI_Bcast from rank 0 failed");
  }
  return Status::OK();
#else
  return FailedPreconditionError("built without MPI");
#endif
}

Result<std::string> JobProcesses::AgreeJobToken(const std::string& given) {
  if (!given.empty()) return given;
  if (world_size_ == 1) return NewJobToken();
#if TROUPE_HAVE_MPI
  return MakeJobToken(MPI_COMM_WORLD);
#else
  return FailedPreconditionError("built without MPI");
#endif
}

Result<ProcessGroup> JobProcesses::Group(int replicas_per_process) {
  if (world_size_ == 1) return ProcessGroup::SingleProcess(replicas_per_process);
#if TROUPE_HAVE_MPI
  return ProcessGroupFromMpi(MPI_COMM_WORLD, replicas_per_process);
#else
  return FailedPreconditionError("built without MPI");
#endif
}

Result<std::unique_ptr<Communicator>> JobProcesses::CreateCommunicator(
    const std::string& backend, const ProcessGroup& group, const CollectiveOptions& options,
    const std::string& job_token, Device device) {
  if (backend == "nccl") return Nccl(group, options, device, world_size_ > 1);
  if (backend != "auto") {
    return InvalidArgumentError("collectives.backend: unknown '" + backend + "'; use auto or nccl");
  }
  if (world_size_ == 1) return InProcessCommunicator::Create(group, options);
#if TROUPE_HAVE_MPI
  return ::troupe::CreateCommunicator("auto", group, options, MPI_COMM_WORLD, job_token);
#else
  (void)job_token;
  return FailedPreconditionError("built without MPI");
#endif
}

}  // namespace troupe
