// Internal to actors/: the pieces RunTraining sets a job up with: the process-level cluster
// (token, communicator, MPI), coordinator addresses, the GPU each replica runs on, the NCCL
// communicator and the choice of checkpoint to resume from.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/train_config.h"
#include "actors/train_state.h"
#include "checkpoint/checkpoint_manager.h"
#include "collectives/communicator.h"
#include "core/device.h"
#include "core/result.h"

namespace troupe::actors {

// The process-level setup every rank shares: token, coordinator, topology, communicator.
// Finalizes MPI last when it initialized it.
struct Cluster {
  std::string job_token;
  ProcessGroup group;
  std::unique_ptr<Communicator> comm;
  bool mpi = false;
  ~Cluster();
};

std::string CheckpointDir(const TrainConfig& c);

// "host:port" split in two; InvalidArgument naming the text when it is not that.
Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& text);

// Rank 0's `value` reaches every rank (MPI only).
Status BroadcastFromRank0(std::string* value);

std::string Hostname();

CollectiveOptions CollectiveOptionsFor(const TrainConfig& c);

// The NCCL communicator of this process's one GPU replica: the unique id comes from rank 0
// over MPI, or is made here for a single process.
Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(const ProcessGroup& group,
                                                             const TrainConfig& config,
                                                             Device device, bool over_mpi);

// Restores the newest checkpoint that reads back cleanly; a damaged one is reported and
// skipped (nothing is deleted). Returns the restored path, or empty when there is none.
Result<std::string> RestoreLatestValid(TrainState& state, ckpt::CheckpointManager& manager);

// Where each local replica runs: the CPU, or gpu:((L * R + r) / replicas_per_gpu) for local
// rank L's replica r. FailedPrecondition naming the missing GPU and the fix when it is not
// there (checked before anything else is touched).
Result<std::vector<Device>> ReplicaDevices(const TrainConfig& config, int local_rank);

}  // namespace troupe::actors
