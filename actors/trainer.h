// RunTraining: one process's part of a training job. It joins the control plane (hosting the
// coordinator on rank 0), receives its global replica ids and replica-hashed RNG keys, builds
// its replicas' traced step functions, reads the global batch stream and gives replica g rows
// [g*b, (g+1)*b) of every global batch, allreduces gradients through collectives/ (in-process,
// shared memory, MPI) in global-replica-id order, applies identical optimizer steps, logs
// progress and TensorBoard scalars, evaluates every epoch, and has the process holding
// replica 0 write checkpoints. It resumes from the run directory's latest valid checkpoint.
//
// The input order depends only on the seed and the global batch, and every sum on the replica
// ids, so 1x4, 2x2 and 4x1 layouts produce bit-identical checkpoints.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "actors/train_config.h"
#include "core/result.h"

namespace troupe::actors {

struct ProcessLaunch {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;       // rank among this host's processes (picks its GPUs)
  bool under_mpi = false;   // MPI can be initialised (mpirun, srun --mpi=pmix)
  std::string coordinator;  // host:port; empty: rank 0 picks a port and tells the others
  std::string job_token;    // empty: made by rank 0 and shared over MPI
  bool fresh = false;       // ignore existing checkpoints (run dir must be empty or forced)
  bool force = false;       // with fresh: delete the old checkpoints first
  std::atomic<bool>* stop_signal = nullptr;  // set by SIGTERM/SIGINT: checkpoint and exit
};

struct TrainSummary {
  int64_t steps = 0;
  int64_t epochs = 0;
  // From the last evaluation of this run; none when it trained no step (already complete).
  std::optional<double> test_loss;
  std::optional<double> test_accuracy;
  double examples_per_sec = 0;
  std::string last_checkpoint;
  bool stopped_by_signal = false;
};

Result<TrainSummary> RunTraining(const TrainConfig& config, const ProcessLaunch& launch);

// Evaluates the checkpoint at `path` (a prefix, or a run/checkpoint directory: its latest) on
// the test split, in this process. Returns (loss, accuracy).
Result<std::pair<double, double>> EvaluateCheckpoint(const TrainConfig& config,
                                                     const std::string& path);

}  // namespace troupe::actors
