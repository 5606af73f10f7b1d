#include "actors/trainer_setup.h"

#include <unistd.h>

#include <cstdlib>

#include "core/gpu.h"
#include "core/logging.h"
#include "troupe/build_info.h"
#if TROUPE_COLLECTIVES_WITH_NCCL
#include "collectives/nccl_communicator.h"
#endif
#if TROUPE_HAVE_MPI
#include <mpi.h>

#include "collectives/mpi_bootstrap.h"
#endif

namespace troupe::actors {

std::string CheckpointDir(const TrainConfig& c) { return c.run_dir + "/checkpoints"; }

Cluster::~Cluster() {
  comm.reset();
#if TROUPE_HAVE_MPI
  if (mpi) FinalizeMpi();
#endif
}

Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("'" + text + "' is not host:port");
  int port = std::atoi(text.c_str() + colon + 1);
  if (port < 0 || port > 65535) return InvalidArgumentError("bad port in '" + text + "'");
  return std::make_pair(text.substr(0, colon), static_cast<uint16_t>(port));
}

Status BroadcastFromRank0(std::string* value) {
#if TROUPE_HAVE_MPI
  int size = static_cast<int>(value->size());
  if (MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return UnavailableError("MPI_Bcast of the coordinator address failed");
  }
  value->resize(static_cast<size_t>(size));
  if (MPI_Bcast(value->data(), size, MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return UnavailableError("MPI_Bcast of the coordinator address failed");
  }
  return Status::OK();
#else
  return FailedPreconditionError("built without MPI");
#endif
}

std::string Hostname() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof(buf) - 1) == 0 ? buf : "localhost";
}

CollectiveOptions CollectiveOptionsFor(const TrainConfig& c) {
  CollectiveOptions o;
  o.deterministic = c.deterministic;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.collective_timeout_s * 1000));
  return o;
}

Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(const ProcessGroup& group,
                                                             const TrainConfig& config,
                                                             Device device, bool over_mpi) {
#if TROUPE_COLLECTIVES_WITH_NCCL
#if TROUPE_HAVE_MPI
  if (over_mpi) {
    TROUPE_ASSIGN_OR_RETURN(auto comm,
                            NcclCommunicator::CreateWithMpi(group, CollectiveOptionsFor(config),
                                                            MPI_COMM_WORLD, device.index));
    return std::unique_ptr<Communicator>(std::move(comm));
  }
#endif
  if (over_mpi) return FailedPreconditionError("collectives.backend = \"nccl\" needs MPI here");
  TROUPE_ASSIGN_OR_RETURN(NcclId id, NcclCommunicator::NewUniqueId());
  TROUPE_ASSIGN_OR_RETURN(
      auto comm, NcclCommunicator::Create(group, CollectiveOptionsFor(config), id, device.index));
  return std::unique_ptr<Communicator>(std::move(comm));
#else
  (void)group, (void)config, (void)device, (void)over_mpi;
  return FailedPreconditionError(
      "collectives.backend = \"nccl\": this troupe was built without NCCL; use backend = "
      "\"auto\"");
#endif
}

Result<std::string> RestoreLatestValid(TrainState& state, ckpt::CheckpointManager& manager) {
  std::vector<std::string> all = manager.checkpoints();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    Result<ckpt::RestoreStatus> r = state.root().Restore(*it);
    if (r.ok()) {
      if (it != all.rbegin()) {
        TROUPE_LOG(WARNING) << "resuming from the older checkpoint " << *it;
      }
      return *it;
    }
    TROUPE_LOG(WARNING) << "checkpoint " << *it << " cannot be restored (" << r.status()
                        << "); trying the previous one (nothing is deleted)";
  }
  if (!all.empty()) {
    return DataLossError("no checkpoint in " + manager.directory() +
                         " restores cleanly; start over with --fresh --force");
  }
  return std::string();
}

Result<std::vector<Device>> ReplicaDevices(const TrainConfig& config, int local_rank) {
  const int R = static_cast<int>(config.replicas_per_process);
  if (config.device != "gpu") return std::vector<Device>(static_cast<size_t>(R), Device::Cpu());
  if (!gpu::Built()) {
    return FailedPreconditionError(
        "train.device = \"gpu\": this troupe was built without CUDA (no nvcc/cuDNN under "
        "/usr/local/cuda when it was configured); rebuild on a CUDA machine or use device = "
        "\"cpu\"");
  }
  const int visible = gpu::DeviceCount();
  std::vector<Device> devices;
  for (int r = 0; r < R; ++r) {
    const int64_t index = (static_cast<int64_t>(local_rank) * R + r) / config.replicas_per_gpu;
    if (index >= visible) {
      const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
      return FailedPreconditionError(
          "train.device = \"gpu\": local rank " + std::to_string(local_rank) + "'s replica " +
          std::to_string(r) + " needs gpu:" + std::to_string(index) + ", but " +
          std::to_string(visible) + " GPU(s) are visible" +
          (cvd ? std::string(" (CUDA_VISIBLE_DEVICES=") + cvd + ")" : std::string()) +
          "; start fewer processes or replicas per host, or share GPUs with "
          "train.replicas_per_gpu");
    }
    devices.push_back(Device::Gpu(static_cast<int>(index)));
    TROUPE_RETURN_IF_ERROR(gpu::CheckDevice(devices.back()));
  }
  return devices;
}

}  // namespace troupe::actors
