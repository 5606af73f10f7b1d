// The public Trainer (see trainer.h): Setup, accessors, RunTraining and EvaluateCheckpoint.
#include "train/trainer.h"

#include <chrono>

#include "checkpoint/checkpoint_state.h"
#include "core/env.h"
#include "train/batches.h"
#include "train/internal/trainer_parts.h"
#include "train/internal/trainer_setup.h"

namespace troupe::train {

Trainer::Trainer(std::unique_ptr<Parts> parts) : p_(std::move(parts)) {}
Trainer::~Trainer() = default;

int64_t Trainer::step() const { return p_->step; }
int64_t Trainer::total_steps() const { return p_->total_steps; }

Result<std::unique_ptr<Trainer>> Trainer::Setup(const TrainConfig& requested,
                                                const ProcessLaunch& launch) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<JobProcesses> processes,
                          JobProcesses::Start(launch.world_size, launch.under_mpi));
  TrainConfig config = requested;
  TROUPE_RETURN_IF_ERROR(
      AgreeReplicasPerProcess(config, *processes, launch.rank, launch.local_size));
  SizeKernelThreads(config, launch.rank, launch.local_size);
  auto p = std::make_unique<Parts>();
  p->config = config;
  p->launch = launch;
  p->links.processes = std::move(processes);
  p->local_replicas = static_cast<int>(config.replicas_per_process);
  p->total_replicas = launch.world_size * p->local_replicas;
  p->chief = launch.rank == 0;
  p->accumulate_steps = std::max<int64_t>(1, config.optimizer.gradient_accumulation_steps);
  // GPUs are checked before anything is written: a job that cannot place its replicas
  // touches nothing.
  TROUPE_ASSIGN_OR_RETURN(p->devices, ReplicaDevices(config, launch.local_rank));
  TROUPE_ASSIGN_OR_RETURN(p->links.job_token, p->links.processes->AgreeJobToken(launch.job_token));
  TROUPE_RETURN_IF_ERROR(CreateCollectives(*p));
  TROUPE_RETURN_IF_ERROR(RestoreRunDir(*p));
  TROUPE_RETURN_IF_ERROR(JoinControlPlane(*p));
  TROUPE_RETURN_IF_ERROR(HonourAssignment(*p));
  TROUPE_RETURN_IF_ERROR(OpenTrainingStream(*p));
  p->steps_per_epoch = p->input.train_data->steps_per_epoch;
  p->total_steps = config.epochs * p->steps_per_epoch;
  if (config.max_steps > 0) p->total_steps = std::min(p->total_steps, config.max_steps);
  p->per_replica_batch = config.global_batch_size / p->total_replicas;
  TROUPE_RETURN_IF_ERROR(p->OpenReports());
  TROUPE_RETURN_IF_ERROR(CreateGradientReduction(*p));
  if (p->accumulate_steps > 1 && !p->reduction.reduce) {
    return UnimplementedError(
        "train.accumulate_steps > 1 sums gradients on the host; a single GPU replica keeps them "
        "on the device. Run with collectives.backend = \"nccl\" or two replicas, or "
        "accumulate_steps = 1");
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(p)));
}

const std::string& Trainer::resumed_from() const { return p_->run.resumed_from; }
const std::vector<int64_t>& Trainer::replica_keys() const { return p_->links.replica_keys; }
int64_t Trainer::gradient_allreduces() const {
  return p_->reduction.bucketer->allreduces_launched();
}

Result<TrainSummary> RunTraining(const TrainConfig& config, const ProcessLaunch& launch) {
  const auto started = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Trainer>> trainer = Trainer::Setup(config, launch);
  Result<TrainSummary> summary = [&]() -> Result<TrainSummary> {
    if (!trainer.ok()) return trainer.status();
    if (launch.rank == 0 && launch.on_ready) TROUPE_RETURN_IF_ERROR(launch.on_ready());
    return (*trainer)->Run();
  }();
  if (summary.ok()) {
    summary->wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  if (launch.on_end) launch.on_end(summary);  // the trainer (and MPI) still up
  return summary;
}

Result<CheckpointScore> EvaluateCheckpoint(const TrainConfig& config, const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(JobInput input, EvaluationInput(config));
  Result<std::unique_ptr<ModelReplicas>> built =
      ModelReplicas::Create(config, {Device::Cpu()}, input.feature_shape, input.num_classes);
  if (!built.ok()) return ModelConfigError(built.status());
  std::unique_ptr<ModelReplicas> replicas = *std::move(built);
  TROUPE_ASSIGN_OR_RETURN(random::Generator gen, random::Generator::FromSeed(config.seed));
  TROUPE_ASSIGN_OR_RETURN(auto state,
                          TrainState::Create(replicas->model(), replicas->optimizer(), gen.state(),
                                             JobShape{}, replicas->loss_scale()));
  std::string where = path;
  Env* env = Env::Default();
  if (env->IsDirectory(where) && env->FileExists(where + "/checkpoints/checkpoint")) {
    where += "/checkpoints";
  }
  CheckpointScore score;
  if (env->IsDirectory(where)) {
    TROUPE_ASSIGN_OR_RETURN(score.checkpoint, ckpt::LatestCheckpoint(where));
  } else {
    score.checkpoint = where;
  }
  TROUPE_RETURN_IF_ERROR(CheckCheckpointModel(score.checkpoint, replicas->model_label()));
  TROUPE_RETURN_IF_ERROR(state->CheckPrecisionMatches(score.checkpoint));
  TROUPE_RETURN_IF_ERROR(state->root().Restore(score.checkpoint).status());
  TROUPE_ASSIGN_OR_RETURN(auto it, input.batches.MakeIterator());
  double loss = 0, correct = 0, top5 = 0, count = 0;
  for (;;) {
    TROUPE_ASSIGN_OR_RETURN(std::optional<input::Element> raw, it->Next());
    if (!raw) break;
    const int64_t n = (*raw)[0].dim(0);
    TROUPE_ASSIGN_OR_RETURN(input::Element batch, ModelRows(input, *raw, 0, n));
    TROUPE_ASSIGN_OR_RETURN(auto m, replicas->Evaluate(0, batch));
    loss += m.loss_sum;
    correct += m.correct;
    top5 += m.top5_correct;
    count += static_cast<double>(n);
  }
  score.per_position = replicas->per_position();
  score.loss = loss / count;
  score.accuracy = correct / count;
  if (replicas->has_top5()) score.top5_accuracy = top5 / count;
  return score;
}

}  // namespace troupe::train
