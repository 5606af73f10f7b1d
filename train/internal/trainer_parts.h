// Internal to train/ (only its own .cc files include it): what a Trainer holds and the steps that
// set it up, shared by trainer.cc (Setup), trainer_processes.cc and trainer_restore.cc (set-up
// steps), trainer_save.cc (Save), trainer_step.cc (a step, evaluation) and trainer_loop.cc (the
// run).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/control_plane.h"
#include "checkpoint/checkpoint_manager.h"
#include "collectives/communicator.h"
#include "collectives/gradient_bucketer.h"
#include "collectives/job_processes.h"
#include "core/device.h"
#include "core/thread_pool.h"
#include "graph/random/generator.h"
#include "input/dataset.h"
#include "train/batches.h"
#include "train/best_checkpoint.h"
#include "train/event_writer.h"
#include "train/metrics_log.h"
#include "train/model_replicas.h"
#include "train/train_state.h"
#include "train/trainer.h"

namespace troupe::train {

// What a step adds up over the replicas of the job (SumOverJob): the loss and correct
// predictions summed over examples, the examples, and a flag (> 0: some rank stops after it).
struct StepSums {
  double loss = 0;
  double correct = 0;
  double examples = 0;
  double stop = 0;
};

// What one evaluation batch adds up over the replicas of the job.
struct EvalSums {
  double loss = 0;
  double correct = 0;
  double examples = 0;
  double top5_correct = 0;
};

// A Trainer's parts, each made by one set-up step (the functions at the end of this file, run
// by Trainer::Setup in the order listed there) and read-only to the steps before it.

// The job's processes and their links (CreateCollectives, then JoinControlPlane and
// HonourAssignment). Declared in destruction order's reverse: the communicator goes before MPI.
struct JobLinks {
  std::unique_ptr<JobProcesses> processes;
  std::string job_token;
  ProcessGroup group;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<actors::ControlPlane> plane;
  actors::Assignment assignment;
  std::vector<int64_t> replica_keys;  // per local replica, from the coordinator
};

// The model, its optimizer and everything a checkpoint holds (RestoreRunDir).
struct RunState {
  // From the seed, replaced by the restored checkpoint's; its unhashed state is checkpointed.
  std::optional<random::Generator> job_generator;
  std::unique_ptr<ModelReplicas> replicas;
  std::unique_ptr<TrainState> state;
  std::unique_ptr<ckpt::CheckpointManager> manager;
  std::string resumed_from;
  // The file a new run's weights came from (model.init_from, or model.keras' .keras file);
  // empty: the initializers (or a resume).
  std::string initial_weights;
};

// This process's input (train_data: RestoreRunDir; feed: OpenTrainingStream; the evaluation
// input: the first Evaluate).
struct InputParts {
  std::unique_ptr<TrainingData> train_data;  // this process's training pipelines
  std::unique_ptr<input::ReplicaFeed> feed;  // their model-ready batches, made ahead
  std::unique_ptr<JobInput> eval_input;      // opened by the first Evaluate, read every epoch
  bool no_eval_split = false;                // the source has no test split
  std::string no_eval_reason;                // why not, naming the key it needs
};

// Gradient reduction (CreateGradientReduction): NCCL on the GPU, or buckets reduced on the host
// while backward runs; and the threads that run the local replicas.
struct GradientReduction {
  bool nccl = false;
  bool device_grads = false;
  bool reduce = true;
  std::vector<GradientBucketer::Param> params;
  // The buckets' own communicator when they live in shared memory (shared_buckets.h).
  std::unique_ptr<Communicator> bucket_comm;
  std::string bucket_placement;  // where they live, for the start-up line (empty: say nothing)
  std::unique_ptr<GradientBucketer> bucketer;
  std::unique_ptr<ThreadPool> replica_pool;
};

// What the chief writes besides checkpoints (OpenReports).
struct Reports {
  std::unique_ptr<EventWriter> events;
  std::unique_ptr<MetricsLog> metrics;   // <run_dir>/metrics.jsonl
  std::unique_ptr<BestCheckpoint> best;  // with checkpoint.keep_best
};

struct Trainer::Parts {
  // Set by Setup before the steps below.
  TrainConfig config;
  ProcessLaunch launch;
  int local_replicas = 1;  // R: replicas of this process
  int total_replicas = 1;  // N: replicas of the job
  int first_replica = 0;   // global id of this process's first replica (JoinControlPlane)
  bool chief = false;      // holds replica 0: writes checkpoints, logs, events
  std::vector<Device> devices;
  int64_t accumulate_steps = 1;  // micro-batches per update (train.accumulate_steps)

  JobLinks links;
  RunState run;
  InputParts input;
  Reports reports;
  GradientReduction reduction;

  // The run's position and length (Setup, once the input is open).
  int64_t step = 0;
  int64_t steps_per_epoch = 1;
  int64_t total_steps = 0;
  int64_t per_replica_batch = 1;

  // The input pipelines this process reads, as the coordinator assigns them: one per replica
  // (ids first_replica.. of total_replicas) unless data.auto_shard is OFF (pipeline 0 of 1).
  input::InputContext InputContext() const;
  // Every pipeline's position, gathered from all processes (a sum over disjoint entries).
  Result<std::vector<int64_t>> GatherInputPositions();
  // One micro-batch of an update on every local replica (trainer_step.cc).
  Status MicroStep(const std::vector<input::Element>& batches, int64_t micro, bool last,
                   std::vector<std::vector<Tensor>>& acc, std::vector<StepSums>& local,
                   std::vector<std::vector<Tensor>>& grads);
  // The index of micro-batch `micro` of the current update among all micro-batches.
  int64_t micro_step(int64_t micro) const;
  // Averages the replicas' new state values across the job and assigns them.
  Status SyncState(std::vector<std::vector<Tensor>>& outputs);
  // Sums the local replicas' StepSums or EvalSums over every replica of the job, field by
  // field, in replica-id order (one allreduce of their doubles).
  template <class Sums>
  Result<Sums> SumOverJob(const std::vector<Sums>& local);
  // A collective that failed because a peer died races the coordinator, whose verdict names
  // the lost worker: waits (up to the peer timeout) for it and reports both.
  Status JobFailed(const Status& local);
  // InvalidArgument naming the step when a checkpointed variable is not finite.
  Status CheckFiniteState() const;
  // Puts the step, epoch, input positions and save counter (step - 1: the next save writes
  // ckpt-<step>) into the checkpointed state.
  void StampState(const std::vector<int64_t>& positions);

  // trainer_reports.cc. After Setup restored the run dir: refuses keep_best =
  // "test_top5_accuracy" for a model with fewer than 5 classes, then (chief) opens the
  // TensorBoard events, metrics.jsonl and the best checkpoint's record.
  Status OpenReports();
  // A progress report's line of metrics.jsonl (chief).
  Status LogTrain(double loss, double accuracy, double learning_rate, double examples_per_sec);
  // An evaluation at the current step: the best checkpoint (every rank joins), then (chief) the
  // printed line, TensorBoard scalars and metrics.jsonl.
  Status ReportEvaluation(const EvalResult& test, bool epoch_end);
  // Whether this evaluation became the best (written); every rank joins the positions' gather.
  Result<bool> KeepBest(const EvalResult& test);
};

// The set-up steps Trainer::Setup (trainer.cc) runs, in this order, and the parts each makes.
// 1. trainer_processes.cc: links.group and links.comm (the job's communicator).
Status CreateCollectives(Trainer::Parts& p);
// 2. trainer_restore.cc: `run` (model replicas, job generator, train state, checkpoint manager),
// restored from the run dir or the initial weights of a new run, and input.train_data.
Status RestoreRunDir(Trainer::Parts& p);
// 3. trainer_processes.cc: links.plane and links.assignment (the coordinator, on rank 0, hands
// out keys hashed from the job generator as the run dir left it), and first_replica.
Status JoinControlPlane(Trainer::Parts& p);
// 4. trainer_processes.cc: the assignment checked against what this process built;
// links.replica_keys.
Status HonourAssignment(Trainer::Parts& p);
// 5. trainer_restore.cc: input.feed at the restored positions.
Status OpenTrainingStream(Trainer::Parts& p);
// 6. Setup: step, steps_per_epoch, total_steps, per_replica_batch.
// 7. Trainer::Parts::OpenReports: `reports`.
// 8. trainer_processes.cc: `reduction` (the gradient buckets, their communicator, the replica
// threads).
Status CreateGradientReduction(Trainer::Parts& p);

}  // namespace troupe::train
