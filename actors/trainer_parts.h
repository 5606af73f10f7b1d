// Internal to actors/: what a Trainer holds and the steps that set it up, shared by trainer.cc
// (Setup), trainer_processes.cc and trainer_restore.cc (set-up steps), trainer_save.cc (Save),
// trainer_step.cc (a step, evaluation) and trainer_loop.cc (the run).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/batches.h"
#include "actors/best_checkpoint.h"
#include "actors/control_plane.h"
#include "actors/event_writer.h"
#include "actors/metrics_log.h"
#include "actors/model_replicas.h"
#include "actors/train_state.h"
#include "actors/trainer.h"
#include "checkpoint/checkpoint_manager.h"
#include "collectives/communicator.h"
#include "collectives/gradient_bucketer.h"
#include "collectives/job_processes.h"
#include "core/device.h"
#include "core/thread_pool.h"
#include "graph/random/generator.h"
#include "input/dataset.h"

namespace troupe::actors {

struct Trainer::Parts {
  TrainConfig config;
  ProcessLaunch launch;
  int local_replicas = 1;  // R: replicas of this process
  int total_replicas = 1;  // N: replicas of the job
  int first_replica = 0;   // global id of this process's first replica
  bool chief = false;      // holds replica 0: writes checkpoints, logs, events
  std::vector<Device> devices;

  // Declared in destruction order's reverse: the communicator goes before MPI.
  std::unique_ptr<JobProcesses> processes;
  std::string job_token;
  ProcessGroup group;
  std::unique_ptr<Communicator> comm;
  // The gradient buckets' own communicator when they live in shared memory (shared_buckets.h).
  std::unique_ptr<Communicator> bucket_comm;
  std::string bucket_placement;  // where they live, for the start-up line (empty: say nothing)
  std::unique_ptr<ControlPlane> plane;
  Assignment assignment;
  std::vector<int64_t> replica_keys;  // per local replica, from the coordinator

  // From the seed, replaced by the restored checkpoint's; its unhashed state is checkpointed.
  std::optional<random::Generator> job_generator;
  std::unique_ptr<ModelReplicas> replicas;
  std::unique_ptr<TrainState> state;
  std::unique_ptr<ckpt::CheckpointManager> manager;
  std::unique_ptr<TrainingData> train_data;  // this process's training pipelines
  std::unique_ptr<input::ReplicaFeed> feed;  // their model-ready batches, made ahead
  std::unique_ptr<JobInput> eval_input;      // opened by the first Evaluate, read every epoch
  bool no_eval_split = false;                // the source has no test split
  std::unique_ptr<EventWriter> events;
  std::unique_ptr<MetricsLog> metrics;   // chief: <run_dir>/metrics.jsonl
  std::unique_ptr<BestCheckpoint> best;  // chief, with checkpoint.keep_best

  // Gradient reduction: NCCL on the GPU, or buckets reduced on the host while backward runs.
  bool nccl = false;
  bool device_grads = false;
  bool reduce = true;
  std::vector<GradientBucketer::Param> params;
  std::unique_ptr<GradientBucketer> bucketer;
  std::unique_ptr<ThreadPool> replica_pool;

  int64_t step = 0;
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 0;
  int64_t per_replica_batch = 1;
  int64_t accumulate_steps = 1;  // micro-batches per update (train.accumulate_steps)
  std::string resumed_from;
  // The file a new run's weights came from (model.init_from, or model.keras' .keras file);
  // empty: the initializers (or a resume).
  std::string initial_weights;

  // The input pipelines this process reads, as the coordinator assigns them: one per replica
  // (ids first_replica.. of total_replicas) unless data.auto_shard is OFF (pipeline 0 of 1).
  input::InputContext InputContext() const;
  // Every pipeline's position, gathered from all processes (a sum over disjoint entries).
  Result<std::vector<int64_t>> GatherInputPositions();
  // One micro-batch of an update on every local replica (trainer_step.cc).
  Status MicroStep(const std::vector<input::Element>& batches, int64_t micro, bool last,
                   std::vector<std::vector<Tensor>>& acc, std::vector<std::array<double, 4>>& local,
                   std::vector<std::vector<Tensor>>& grads);
  // The index of micro-batch `micro` of the current update among all micro-batches.
  int64_t micro_step(int64_t micro) const;
  // Averages the replicas' new state values across the job and assigns them.
  Status SyncState(std::vector<std::vector<Tensor>>& outputs);
  // Sums (loss, correct, count, stop) over every replica of the job, in replica-id order.
  Result<std::array<double, 4>> SumMetrics(const std::vector<std::array<double, 4>>& local);
  // A collective that failed because a peer died races the coordinator, whose verdict names
  // the lost worker: waits (up to the peer timeout) for it and reports both.
  Status JobFailed(const Status& local);
  // InvalidArgument naming the step when a checkpointed variable is not finite.
  Status CheckFiniteState() const;
  // Puts the step, epoch, input positions and save counter (step - 1: the next save writes
  // ckpt-<step>) into the checkpointed state.
  void StampState(const std::vector<int64_t>& positions);

  // trainer_reports.cc. After Setup restored the run dir: refuses keep_best =
  // "test_top5_accuracy" for a model with fewer than 5 classes, then (chief) opens
  // metrics.jsonl and the best checkpoint's record.
  Status OpenReports();
  // A progress report's line of metrics.jsonl (chief).
  Status LogTrain(double loss, double accuracy, double learning_rate, double examples_per_sec);
  // An evaluation at the current step: the best checkpoint (every rank joins), then (chief) the
  // printed line, TensorBoard scalars and metrics.jsonl.
  Status ReportEvaluation(const EvalResult& test, bool epoch_end);
  // Whether this evaluation became the best (written); every rank joins the positions' gather.
  Result<bool> KeepBest(const EvalResult& test);
};

// The set-up steps Trainer::Setup (trainer.cc) runs, in this order.
// trainer_processes.cc: the job's communicator and process group.
Status CreateCollectives(Trainer::Parts& p);
// trainer_restore.cc: the training data, model replicas, job generator, train state and
// checkpoint manager, restored from the run dir (or the initial weights of a new run).
Status RestoreRunDir(Trainer::Parts& p);
// trainer_processes.cc: the coordinator (rank 0) and this process's assignment.
Status JoinControlPlane(Trainer::Parts& p);
// trainer_processes.cc: the assignment checked against what this process built.
Status HonourAssignment(Trainer::Parts& p);
// trainer_restore.cc: the input feed at the restored positions.
Status OpenTrainingStream(Trainer::Parts& p);
// trainer_processes.cc: the gradient buckets and their communicator.
Status CreateGradientReduction(Trainer::Parts& p);

}  // namespace troupe::actors
