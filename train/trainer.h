// Trainer: one process's part of a training job. Setup builds the communicator and its
// replicas' traced step functions, restores the run dir's latest valid checkpoint, then joins
// the control plane (hosting the coordinator on rank 0, which hashes the restored job
// generator into per-replica keys) and checks it can do what it was assigned. RunStep gives
// each local replica its next per-replica batch (from its own auto-sharded pipeline, or rows
// [g*b, (g+1)*b) of one global stream with data.auto_shard = "OFF": train/batches.h), runs
// its traced step, allreduces gradients through collectives/ in global-replica-id order
// (bucketed, while backward runs) and applies identical optimizer steps. Evaluate scores the
// test split; Save has the process holding replica 0 write a checkpoint; Run loops to the end
// with progress lines, TensorBoard scalars, checkpoints every K steps and evaluations.
//
// A replica's input depends only on the seed, its global replica id and the replica count, and
// every sum on the replica ids, so 1x4, 2x2 and 4x1 layouts produce bit-identical checkpoints.
// A non-finite loss or gradient stops the job (or skips the update with train.skip_nonfinite),
// and a checkpoint whose variables are not finite is never written.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "train/train_config.h"

namespace troupe::train {

struct TrainSummary;

struct ProcessLaunch {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;       // rank among this host's processes (picks its GPUs)
  int local_size = 1;       // processes on this host (they share its cores)
  bool under_mpi = false;   // MPI can be initialised (mpirun, srun --mpi=pmix)
  std::string coordinator;  // host:port; empty: rank 0 picks a port and tells the others
  std::string job_token;    // empty: made by rank 0 and shared with the others
  bool fresh = false;       // ignore existing checkpoints (run dir must be empty or forced)
  bool force = false;       // with fresh: delete the old checkpoints first
  std::atomic<bool>* stop_signal = nullptr;  // set by SIGTERM/SIGINT: checkpoint and exit
  // Rank 0 calls it once setup has succeeded (model built, checkpoint restored), before the
  // first step: a job that cannot start leaves the run dir as it was.
  std::function<Status()> on_ready;
  // Called with the run's outcome (its summary, or the error that ended it) while the job's
  // processes are still up: once the trainer is torn down, MPI_Finalize waits for every rank,
  // and an mpirun that was signalled, or saw another rank exit, kills the ranks waiting there.
  // What must reach the log (rank 0's end-of-run line, this rank's error) is printed here. An
  // error in set-up arrives after set-up's own teardown.
  std::function<void(const Result<TrainSummary>&)> on_end;
};

// How a run that did not fail ended.
struct TrainSummary {
  int64_t first_step = 0;  // where this run started (the resume point; 0 for a new run)
  int64_t steps = 0;       // where it ended
  int64_t epochs = 0;
  // From the last evaluation of this run; none when it trained no step (already complete).
  std::optional<double> test_loss;
  std::optional<double> test_accuracy;
  std::optional<double> test_top5_accuracy;  // models with >= 5 classes
  // Why there was no evaluation when the source has no test split ("data.eval_files: ...").
  std::string no_evaluation;
  double wall_s = 0;            // this run, set-up included
  double examples_per_sec = 0;  // mean over this run's steps
  // Updates skipped as non-finite (train.skip_nonfinite, or mixed_float16's loss scale).
  int64_t skipped_steps = 0;
  double allreduce_wait_ms = 0;  // per step, on rank 0 (StepMetrics::allreduce_wait_s)
  // Gradient allreduces of this run that folded buckets in place in shared memory, on rank 0.
  int64_t in_place_allreduces = 0;
  std::string last_checkpoint;
  // Stopped early (SIGTERM/SIGINT on some rank, or the coordinator's order): checkpoint
  // written, a rerun resumes.
  bool stopped_by_signal = false;
};

// An evaluation over the test split, summed over the job (NaN loss and accuracy when the
// source has no test split).
struct EvalResult {
  double loss = 0;  // with train.label_smoothing, the smoothed loss (as Keras' evaluate)
  double accuracy = 0;
  std::optional<double> top5_accuracy;  // models with >= 5 classes
  std::optional<double> perplexity;     // per-position models: exp(loss)
  // The value of checkpoint.keep_best's metric; NaN for kNone.
  double Metric(TestMetric metric) const;
};

// One step's metrics, summed over every replica of the job.
struct StepMetrics {
  double loss_sum = 0;
  double correct = 0;
  double examples = 0;
  bool stop = false;     // some rank was asked to stop (signal or coordinator)
  bool skipped = false;  // the update was skipped: the loss or a gradient was not finite
  // mixed_float16: skipped by the dynamic loss scale (gradients overflowed; the scale halved).
  bool loss_scale_skipped = false;
  // This process's wait for the gradient allreduce after its backward passes ended (the
  // buckets that did not finish while backward ran).
  double allreduce_wait_s = 0;
  // This process's wait for its replicas' input batches (0 when the feed kept ahead).
  double input_wait_s = 0;
};

class Trainer {
 public:
  static Result<std::unique_ptr<Trainer>> Setup(const TrainConfig& config,
                                                const ProcessLaunch& launch);
  ~Trainer();

  // The checkpoint Setup restored (weights, optimizer slots, step, input position, job
  // generator: the newest one of the run dir that reads back cleanly), or "" for a new run.
  const std::string& resumed_from() const;
  // One synchronous step of every replica. InvalidArgument naming the step when the loss or
  // a gradient is not finite (unless train.skip_nonfinite: then the update is skipped).
  Result<StepMetrics> RunStep();
  // Loss, accuracy, top-5 accuracy and perplexity over the test split, summed over the job.
  Result<EvalResult> Evaluate();
  // A checkpoint at the current step (written by the process holding replica 0).
  Status Save();
  // RunStep until the configured end or a stop, with logging, checkpoints and evaluation.
  Result<TrainSummary> Run();

  int64_t step() const;
  int64_t total_steps() const;
  // Gradient allreduces this process launched so far (buckets per update; one update of
  // train.accumulate_steps micro-batches reduces once).
  int64_t gradient_allreduces() const;
  // The coordinator's key for each local replica (its random draws' seeds derive from it).
  const std::vector<int64_t>& replica_keys() const;

  struct Parts;  // everything a job holds; defined in internal/trainer_parts.h

 private:
  explicit Trainer(std::unique_ptr<Parts> parts);
  std::unique_ptr<Parts> p_;
};

// The replicas this process would run for train.replicas_per_process = 0 ("auto"): on CPUs
// from its share of the cores and the global batch (core/cpu_budget.h
// ChooseReplicasPerProcess), on GPUs 1; a set count as it is. `why`, when given, says how.
// Setup makes every process of a job take rank 0's count, so hosts with other core counts
// still agree.
int ReplicasPerProcess(const TrainConfig& config, int world_size, int local_size,
                       std::string* why = nullptr);

// Setup and Run.
Result<TrainSummary> RunTraining(const TrainConfig& config, const ProcessLaunch& launch);

// Evaluates the checkpoint at `path` (a prefix, or a run/checkpoint directory: its latest) on
// the test split, in this process. Returns the checkpoint it scored, loss and accuracy.
struct CheckpointScore {
  std::string checkpoint;
  double loss = 0;
  double accuracy = 0;
  std::optional<double> top5_accuracy;  // models with >= 5 classes
  bool per_position = false;            // a language model: loss and accuracy per position
};
Result<CheckpointScore> EvaluateCheckpoint(const TrainConfig& config, const std::string& path);

}  // namespace troupe::train
