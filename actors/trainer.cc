// Trainer set-up, resume and checkpointing (see trainer.h); the step is in trainer_step.cc and
// the run loop in trainer_loop.cc.
#include "actors/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "actors/batches.h"
#include "actors/keras_weights_init.h"
#include "actors/shared_buckets.h"
#include "actors/trainer_parts.h"
#include "actors/trainer_setup.h"
#include "checkpoint/bundle_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/object_checkpoint.h"
#include "core/env.h"
#include "core/gpu.h"
#include "core/logging.h"

namespace troupe::actors {
namespace {

// `dir` exists and holds an entry.
bool HasEntries(const std::string& dir) {
  Result<std::vector<std::string>> names = Env::Default()->GetChildren(dir);
  return names.ok() && !names->empty();
}

// Rank 0 hosts the coordinator; every rank learns its address and registers with it.
Status JoinControlPlane(Trainer::Parts& p) {
  ControlOptions control;
  control.job_token = p.job_token;
  control.rank = p.launch.rank;
  control.world_size = p.launch.world_size;
  control.heartbeat_interval_s = p.config.heartbeat_interval_s;
  control.peer_timeout_s = p.config.peer_timeout_s;
  TROUPE_ASSIGN_OR_RETURN(p.plane, ControlPlane::Create(control));
  std::string coordinator = p.launch.coordinator;
  if (p.launch.rank == 0) {
    CoordinatorOptions copts;
    if (!coordinator.empty()) {
      TROUPE_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
      copts.port = hp.second;
    }
    copts.replicas_per_process = p.local_replicas;
    Tensor state = p.job_generator->state();
    copts.job_rng_state.assign(state.data<int64_t>(), state.data<int64_t>() + state.num_elements());
    copts.rng_alg = 1;
    copts.shard_policy = p.config.auto_shard;
    copts.replica_key = [](const std::vector<int64_t>& s, int alg, int replica) -> Result<int64_t> {
      TROUPE_ASSIGN_OR_RETURN(
          random::KeyCounter kc,
          random::ReplicaKeyCounter(Tensor::FromVector(s), static_cast<random::RngAlgorithm>(alg),
                                    replica));
      return static_cast<int64_t>(kc.key);
    };
    if (coordinator.empty()) {
      TROUPE_ASSIGN_OR_RETURN(AdvertiseChoice advertised, AdvertisedHost(p.config));
      TROUPE_ASSIGN_OR_RETURN(uint16_t port, p.plane->StartCoordinator(copts));
      coordinator = advertised.host + ":" + std::to_string(port);
      if (p.launch.world_size > 1) {
        TROUPE_LOG(INFO) << "coordinator at " << coordinator << " (" << advertised.reason << ")";
      }
    } else {
      WarnAdvertiseIgnored(p.config);
      TROUPE_RETURN_IF_ERROR(p.plane->StartCoordinator(copts).status());
    }
  }
  if (p.launch.coordinator.empty()) {
    TROUPE_RETURN_IF_ERROR(p.processes->BroadcastFromRank0(&coordinator));
  }
  std::string host;
  uint16_t port = 0;
  if (p.launch.world_size > 1) {
    TROUPE_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
    host = hp.first;
    port = hp.second;
  }
  std::string devices;
  for (const Device& d : p.devices) devices += (devices.empty() ? "" : ",") + d.ToString();
  TROUPE_ASSIGN_OR_RETURN(p.assignment, p.plane->Join(host, port, p.local_replicas, devices));
  TROUPE_LOG(INFO) << "rank " << p.launch.rank << ": replicas [" << p.assignment.first_replica
                   << ", " << p.assignment.first_replica + p.assignment.num_replicas << ") of "
                   << p.assignment.total_replicas;
  p.first_replica = p.assignment.first_replica;
  return Status::OK();
}

Status CreateCollectives(Trainer::Parts& p) {
  p.nccl = p.config.collectives_backend == "nccl";
  TROUPE_ASSIGN_OR_RETURN(p.group, p.processes->Group(p.local_replicas));
  TROUPE_ASSIGN_OR_RETURN(p.comm, p.processes->CreateCommunicator(
                                      p.config.collectives_backend, p.group,
                                      CollectiveOptionsFor(p.config), p.job_token, p.devices[0]));
  return Status::OK();
}

// The checkpoint directory, emptied first with --fresh --force; every rank sees it before any
// writes to it.
Status PrepareCheckpointDir(Trainer::Parts& p) {
  Env* env = Env::Default();
  const std::string dir = CheckpointDir(p.config);
  if (p.launch.fresh && HasEntries(dir)) {
    if (!p.launch.force) {
      return FailedPreconditionError("--fresh: " + dir +
                                     " holds checkpoints; add --force to delete them");
    }
    if (p.chief) TROUPE_RETURN_IF_ERROR(env->DeleteRecursively(dir).WithContext("--fresh"));
  }
  if (p.launch.world_size > 1) TROUPE_RETURN_IF_ERROR(p.comm->Barrier()->Wait());
  TROUPE_RETURN_IF_ERROR(env->CreateDirectories(dir));
  ckpt::CheckpointManagerOptions mopts;
  mopts.directory = dir;
  mopts.max_to_keep = static_cast<int>(p.config.max_to_keep);
  if (p.config.keep_checkpoint_every_n_hours > 0) {
    mopts.keep_checkpoint_every_n_hours = p.config.keep_checkpoint_every_n_hours;
  }
  TROUPE_ASSIGN_OR_RETURN(p.manager, ckpt::CheckpointManager::Create(&p.state->root(), mopts));
  return Status::OK();
}

// Gradients stay on the GPU when NCCL reduces them, or when a single replica's weights live
// on its GPU (nothing to reduce; the update runs there). Host reductions go through buckets
// that are reduced while the backward pass still runs.
Status CreateGradientReduction(Trainer::Parts& p) {
  // Gradients, then the state values the replicas average (ModelReplicas::state()).
  for (const Variable& var : p.replicas->trainable()) {
    p.params.push_back({var.name(), var.dtype(), var.shape()});
  }
  for (const Variable& var : p.replicas->state()) {
    p.params.push_back({var.name(), var.dtype(), var.shape()});
  }
  const bool resident = !p.replicas->variable_device().is_cpu();
  p.device_grads = p.nccl || (resident && p.total_replicas == 1);
  p.reduce = p.nccl || !p.device_grads;
  BucketOptions bopts;
  bopts.bucket_bytes = static_cast<size_t>(p.config.bucket_mib * (1 << 20));
  // Buckets smaller than the default 1 MiB first bucket make every bucket that small.
  bopts.first_bucket_bytes = std::min(bopts.first_bucket_bytes, bopts.bucket_bytes);
  if (p.nccl) bopts.device = p.devices[0];
  if (!p.nccl && !p.device_grads) {
    TROUPE_ASSIGN_OR_RETURN(
        BucketCommunicator shared,
        SharedBucketCommunicator(*p.comm, *p.processes, CollectiveOptionsFor(p.config), p.job_token,
                                 BucketHeapBytes(p.params, p.local_replicas)));
    p.bucket_comm = std::move(shared.comm);
    p.bucket_placement = std::move(shared.placement);
  }
  Communicator* comm = p.bucket_comm ? p.bucket_comm.get() : p.comm.get();
  TROUPE_ASSIGN_OR_RETURN(p.bucketer, GradientBucketer::Create(comm, p.params, bopts));
  return Status::OK();
}

// Sums across the job's replicas inside a step (synchronized BatchNormalization), through the
// host communicator; none when NCCL reduces on the GPU.
std::shared_ptr<CrossReplicaSummer> CrossReplicaSums(Trainer::Parts& p) {
  if (p.nccl) return nullptr;
  return std::make_shared<CrossReplicaSummer>(
      p.comm.get(), p.local_replicas,
      std::chrono::milliseconds(static_cast<int64_t>(p.config.collective_timeout_s * 1000)));
}

// Where a new run's weights come from: model.init_from, else the .keras file of model.keras
// unless model.init = "fresh"; no path: the initializers. `explicit_file` is model.init =
// "file" (a .keras without weights is then an error, not a fresh start). Contradicting keys
// are FailedPrecondition (a configuration error).
struct InitialWeights {
  std::string key;  // "model.init_from" | "model.keras"
  std::string path;
  bool explicit_file = false;
};

Result<InitialWeights> InitialWeightsOf(const TrainConfig& c) {
  const bool keras_file =
      c.model_keras.size() > 6 && c.model_keras.compare(c.model_keras.size() - 6, 6, ".keras") == 0;
  if (!c.init.empty() && !c.init_from.empty()) {
    return FailedPreconditionError("model.init = \"" + c.init + "\" and model.init_from = \"" +
                                   c.init_from +
                                   "\" both say where the weights come from; keep one");
  }
  if (c.init == "file" && !keras_file) {
    return FailedPreconditionError(
        "model.init = \"file\" takes the weights of model.keras's .keras file, and model.keras "
        "is " +
        (c.model_keras.empty() ? std::string("not set")
                               : "\"" + c.model_keras + "\" (a .json holds no weights)") +
        "; use a .keras file (model.save('m.keras')), or model.init_from for a weights file");
  }
  if (!c.init_from.empty()) return InitialWeights{"model.init_from", c.init_from, false};
  if (keras_file && c.init != "fresh") {
    return InitialWeights{"model.keras", c.model_keras, c.init == "file"};
  }
  return InitialWeights{};
}

// The model weights of a Keras weights file (.weights.h5, or a .keras file's), all or nothing
// (actors/keras_weights_init.h).
Status InitFromKerasWeights(Trainer::Parts& p, const InitialWeights& from) {
  Result<ckpt::KerasWeightsH5> file = ReadKerasWeightsFile(from.path);
  auto holds_layers = [](const ckpt::KerasWeightsH5& f) {
    auto it = f.tensors.lower_bound("layers/");
    return it != f.tensors.end() && it->first.rfind("layers/", 0) == 0;
  };
  const bool no_weights = file.ok() && !holds_layers(*file);
  if (from.key == "model.keras" && !from.explicit_file &&
      ((!file.ok() && file.status().code() == StatusCode::kNotFound) || no_weights)) {
    // A .keras saved before the model was built holds no weights: initializers, as Keras.
    if (p.launch.rank == 0) {
      std::printf("model.keras %s holds no weights: starting from initial values\n",
                  from.path.c_str());
    }
    return Status::OK();
  }
  if (!file.ok()) return file.status().WithContext(from.key);
  TROUPE_ASSIGN_OR_RETURN(std::vector<nn::KerasLayer> layers, p.replicas->model().KerasLayers());
  Result<KerasWeightsRestore> restored =
      RestoreKerasWeights(layers, *file, from.path, KerasH5Keys(p.replicas->model()));
  if (!restored.ok()) return restored.status().WithContext(from.key);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  p.initial_weights = from.path;
  if (p.launch.rank == 0) {
    std::printf(
        "%s %s: weights from the file: %d model weights restored%s; not in the file (initial "
        "values kept): %s; in the file but not in the model: %s\n",
        from.key.c_str(), from.path.c_str(), restored->restored,
        restored->by_class_and_position
            ? " (its layer names differ from the model's: matched by class and position, as "
              "Keras' load_weights does)"
            : "",
        join(restored->missing).c_str(), join(restored->unused).c_str());
  }
  return Status::OK();
}

// `[model] init_from`: the model weights a checkpoint holds at the model's Keras paths (Keras'
// tf.train.Checkpoint(model=m, ...) output, or a Troupe run), all or nothing; what the model
// has that the checkpoint lacks keeps its initial value, and both lists are printed. Keras
// weights files (.keras, .weights.h5), init_from's or model.keras', go to InitFromKerasWeights.
Status InitFromCheckpoint(Trainer::Parts& p) {
  TROUPE_ASSIGN_OR_RETURN(InitialWeights from, InitialWeightsOf(p.config));
  if (from.path.empty()) return Status::OK();
  if (IsKerasWeightsPath(from.path)) return InitFromKerasWeights(p, from);
  const std::string& path = from.path;
  ckpt::TrackableObject root;
  root.Track("model", p.state->model_layout());
  ckpt::RestoreOptions options;
  options.atomic = true;  // a shape mismatch changes no weight
  Result<ckpt::RestoreStatus> restored = [&]() -> Result<ckpt::RestoreStatus> {
    TROUPE_ASSIGN_OR_RETURN(std::string prefix, ckpt::ResolveCheckpointPrefix(path));
    TROUPE_ASSIGN_OR_RETURN(auto reader, ckpt::BundleReader::Open(prefix));
    return ckpt::RestoreObjectGraph(*reader, root, options);
  }();
  if (!restored.ok()) return restored.status().WithContext("model.init_from " + path);
  if (restored->restored_tensors() == 0) {
    return InvalidArgumentError("model.init_from " + path +
                                ": none of the model's weights is in this checkpoint (was it "
                                "written for another model?)");
  }
  std::vector<std::string> unused;
  for (const std::string& u : restored->unused_checkpoint_paths()) {
    // Model weights; a Keras checkpoint names trainable ones through its optimizer.
    if (u.rfind("model/", 0) == 0 || u.rfind("optimizer/_trainable_variables/", 0) == 0) {
      unused.push_back(u);
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  if (p.launch.rank == 0) {
    std::printf(
        "init_from %s: %d model weights restored; not in the checkpoint (initial "
        "values kept): %s; in the checkpoint but not in the model: %s\n",
        path.c_str(), restored->restored_tensors(),
        join(restored->unmatched_object_paths()).c_str(), join(unused).c_str());
  }
  p.initial_weights = path;
  return Status::OK();
}

// The model, optimizer and checkpoint state, restored from the newest checkpoint of the run
// dir that reads back cleanly (nothing restored for a new run). A checkpoint written for
// another model, global batch or optimizer is refused naming both.
Status RestoreRunDir(Trainer::Parts& p) {
  std::vector<int64_t> ids;
  for (int g : p.group.local_replica_ids()) ids.push_back(g);
  auto job_min = [&p](int64_t local) { return MinOverJob(*p.comm, local); };
  TROUPE_ASSIGN_OR_RETURN(TrainingData data,
                          OpenTrainingData(p.config, p.total_replicas, std::move(ids), job_min));
  p.train_data = std::make_unique<TrainingData>(std::move(data));
  Result<std::unique_ptr<ModelReplicas>> replicas =
      ModelReplicas::Create(p.config, p.devices, p.train_data->source.feature_shape,
                            p.train_data->source.num_classes, CrossReplicaSums(p));
  if (!replicas.ok()) return ModelConfigError(replicas.status());
  p.replicas = *std::move(replicas);
  TROUPE_ASSIGN_OR_RETURN(
      p.job_generator, random::Generator::FromSeed(p.config.seed, random::RngAlgorithm::kPhilox));
  JobShape shape{p.total_replicas, p.config.global_batch_size, p.replicas->model_label(),
                 nn::OptimizerLabel(p.config.optimizer), p.config.name};
  TROUPE_ASSIGN_OR_RETURN(
      p.state, TrainState::Create(p.replicas->model(), p.replicas->optimizer(),
                                  p.job_generator->state(), shape, p.replicas->loss_scale()));
  // A new run takes init_from's weights before it writes anything, so a checkpoint that does
  // not fit leaves the run dir as it was.
  const std::string dir = CheckpointDir(p.config);
  const bool had_checkpoints = !p.launch.fresh && HasEntries(dir);
  TROUPE_RETURN_IF_ERROR(InitialWeightsOf(p.config).status());  // contradictions, even resuming
  if (!had_checkpoints) TROUPE_RETURN_IF_ERROR(InitFromCheckpoint(p));
  TROUPE_RETURN_IF_ERROR(PrepareCheckpointDir(p));
  if (!p.manager->checkpoints().empty()) {
    TROUPE_RETURN_IF_ERROR(CheckRecordedJob(p.manager->checkpoints().back(), shape));
  }
  TROUPE_ASSIGN_OR_RETURN(p.resumed_from, RestoreLatestValid(*p.state, *p.manager));
  if (p.resumed_from.empty()) return had_checkpoints ? InitFromCheckpoint(p) : Status::OK();
  const JobShape saved = p.state->job();
  if (saved.model != shape.model || saved.global_batch_size != shape.global_batch_size ||
      saved.optimizer != shape.optimizer) {
    return FailedPreconditionError(
        "cannot resume from " + p.resumed_from + ": it was written for model '" + saved.model +
        "' with global batch " + std::to_string(saved.global_batch_size) + " and optimizer '" +
        saved.optimizer + "', the config asks for '" + shape.model + "' with " +
        std::to_string(shape.global_batch_size) + " and '" + shape.optimizer +
        "'; restore the old config or start over with --fresh --force");
  }
  if (saved.total_replicas != p.total_replicas) {
    TROUPE_LOG(WARNING) << "resuming with " << p.total_replicas
                        << " replicas from a checkpoint written with " << saved.total_replicas
                        << "; training continues, but its bits will differ from a run that kept "
                        << saved.total_replicas;
  }
  p.step = p.state->step();
  TROUPE_RETURN_IF_ERROR(ApplyConfigLearningRate(p.replicas->optimizer(),
                                                 p.config.optimizer.learning_rate, p.resumed_from,
                                                 p.chief)
                             .status());
  TROUPE_ASSIGN_OR_RETURN(
      p.job_generator,
      random::Generator::FromState(p.state->generator_state(), random::RngAlgorithm::kPhilox));
  return Status::OK();
}

// What the coordinator assigned is what this process does; anything it cannot do stops the
// job with a message naming it.
Status HonourAssignment(Trainer::Parts& p) {
  const Assignment& a = p.assignment;
  auto refuse = [&](const std::string& what) {
    return FailedPreconditionError("rank " + std::to_string(p.launch.rank) +
                                   " cannot honour the coordinator's assignment: " + what);
  };
  if (p.group.local_replica_ids().front() != a.first_replica ||
      p.group.num_replicas() != a.total_replicas || a.num_replicas != p.local_replicas) {
    return refuse("replicas [" + std::to_string(a.first_replica) + ", " +
                  std::to_string(a.first_replica + a.num_replicas) + ") of " +
                  std::to_string(a.total_replicas) + ", but collectives see " + p.group.ToString());
  }
  if (static_cast<int>(a.replica_rng_keys.size()) != p.local_replicas) {
    return refuse(std::to_string(a.replica_rng_keys.size()) + " replica RNG keys for " +
                  std::to_string(p.local_replicas) + " replicas");
  }
  Tensor state = p.job_generator->state();
  if (a.job_rng_state !=
      std::vector<int64_t>(state.data<int64_t>(), state.data<int64_t>() + state.num_elements())) {
    return refuse("its job generator state is not the one this run dir holds");
  }
  const input::InputContext built = p.InputContext();
  if (a.input_pipeline_id != built.input_pipeline_id ||
      a.num_input_pipelines != built.num_input_pipelines) {
    return refuse("input pipeline " + std::to_string(a.input_pipeline_id) + " of " +
                  std::to_string(a.num_input_pipelines) + ", but this process reads pipeline " +
                  std::to_string(built.input_pipeline_id) + " of " +
                  std::to_string(built.num_input_pipelines));
  }
  if (a.shard_policy != p.config.auto_shard) {
    return refuse("shard policy " + a.shard_policy + ", the config says " + p.config.auto_shard);
  }
  p.replica_keys = a.replica_rng_keys;
  return Status::OK();
}

// The positions the restored checkpoint recorded (none for a new run), checked against the
// pipelines this run builds: input that cannot continue exactly is refused, never replaced.
Result<std::vector<int64_t>> RestoredPositions(Trainer::Parts& p) {
  if (p.resumed_from.empty()) return std::vector<int64_t>{};
  TROUPE_ASSIGN_OR_RETURN(input::IteratorState state, p.state->iterator_state());
  Result<input::InputPositions> saved = input::DecodeInputPositions(state);
  const TrainingData& d = *p.train_data;
  const size_t pipelines = d.global() ? 1 : static_cast<size_t>(p.total_replicas);
  if (saved.status().code() == StatusCode::kNotFound && d.global()) {
    // Written before per-replica input: the same global stream, one batch per step.
    return std::vector<int64_t>{p.step};
  }
  if (!saved.ok()) {
    return FailedPreconditionError(
        "cannot resume from " + p.resumed_from + ": " + saved.status().message() +
        (saved.status().code() == StatusCode::kNotFound
             ? " (it predates per-replica input and read one global stream); resume with "
               "--set data.auto_shard=OFF, or start over with --fresh --force"
             : ""));
  }
  std::string why = input::InputMismatch(*saved, d.Positions(std::vector<int64_t>(pipelines, 0)));
  for (int64_t pos : saved->positions) {
    if (why.empty() && pos != p.step * p.accumulate_steps) {
      why = "its input streams stand at batch " + std::to_string(pos) + ", not step " +
            std::to_string(p.step) + " x train.accumulate_steps " +
            std::to_string(p.accumulate_steps) + " (was train.accumulate_steps changed?)";
    }
  }
  if (!why.empty()) {
    return FailedPreconditionError("cannot resume from " + p.resumed_from +
                                   " with the same data: " + why +
                                   "; restore the old settings or start over with --fresh --force");
  }
  return saved->positions;
}

// This process's input feed, at the positions the restored checkpoint recorded.
Status OpenTrainingStream(Trainer::Parts& p) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> positions, RestoredPositions(p));
  TROUPE_ASSIGN_OR_RETURN(
      p.feed, StartFeed(p.config, *p.train_data, positions, p.step * p.accumulate_steps));
  return Status::OK();
}
}  // namespace

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
  p->processes = std::move(processes);
  p->local_replicas = static_cast<int>(config.replicas_per_process);
  p->total_replicas = launch.world_size * p->local_replicas;
  p->chief = launch.rank == 0;
  p->accumulate_steps = std::max<int64_t>(1, config.optimizer.gradient_accumulation_steps);
  // GPUs are checked before anything is written: a job that cannot place its replicas
  // touches nothing.
  TROUPE_ASSIGN_OR_RETURN(p->devices, ReplicaDevices(config, launch.local_rank));
  TROUPE_ASSIGN_OR_RETURN(p->job_token, p->processes->AgreeJobToken(launch.job_token));
  TROUPE_RETURN_IF_ERROR(CreateCollectives(*p));
  TROUPE_RETURN_IF_ERROR(RestoreRunDir(*p));
  // The coordinator hands out keys hashed from the job generator as the run dir left it.
  TROUPE_RETURN_IF_ERROR(JoinControlPlane(*p));
  TROUPE_RETURN_IF_ERROR(HonourAssignment(*p));
  TROUPE_RETURN_IF_ERROR(OpenTrainingStream(*p));
  p->steps_per_epoch = p->train_data->steps_per_epoch;
  p->total_steps = config.epochs * p->steps_per_epoch;
  if (config.max_steps > 0) p->total_steps = std::min(p->total_steps, config.max_steps);
  p->per_replica_batch = config.global_batch_size / p->total_replicas;
  if (p->chief) {
    TROUPE_ASSIGN_OR_RETURN(p->events,
                            EventWriter::Create(config.run_dir + "/events", config.name));
  }
  TROUPE_RETURN_IF_ERROR(p->OpenReports());
  TROUPE_RETURN_IF_ERROR(CreateGradientReduction(*p));
  if (p->accumulate_steps > 1 && !p->reduce) {
    return UnimplementedError(
        "train.accumulate_steps > 1 sums gradients on the host; a single GPU replica keeps them "
        "on the device. Run with collectives.backend = \"nccl\" or two replicas, or "
        "accumulate_steps = 1");
  }
  p->replica_pool = std::make_unique<ThreadPool>(std::max(1, p->local_replicas - 1), "replicas");
  return std::unique_ptr<Trainer>(new Trainer(std::move(p)));
}

const std::string& Trainer::resumed_from() const { return p_->resumed_from; }
const std::vector<int64_t>& Trainer::replica_keys() const { return p_->replica_keys; }
int64_t Trainer::gradient_allreduces() const { return p_->bucketer->allreduces_launched(); }

Status Trainer::Save() {
  Parts& p = *p_;
  // Every rank takes part in gathering the positions; the chief writes them.
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> positions, p.GatherInputPositions());
  if (!p.chief) return Status::OK();
  TROUPE_RETURN_IF_ERROR(p.CheckFiniteState());
  p.StampState(positions);
  TROUPE_ASSIGN_OR_RETURN(std::string path, p.manager->Save());
  p.plane->ReportCheckpoint(p.step, path);
  return Status::OK();
}

void Trainer::Parts::StampState(const std::vector<int64_t>& positions) {
  state->SetProgress(step, step / steps_per_epoch);
  state->SetIteratorState(input::EncodeInputPositions(train_data->Positions(positions)));
  // save_counter tracks the step (ckpt-<step>), so a resumed run's checkpoint carries the
  // same counter as an uninterrupted one's, however often either saved.
  state->root().save_counter().set_value(Tensor::Scalar<int64_t>(step - 1));
}

input::InputContext Trainer::Parts::InputContext() const {
  if (config.auto_shard == "OFF") return input::InputContext{1, 0, total_replicas};
  return input::InputContext{total_replicas, first_replica, total_replicas};
}

Result<std::vector<int64_t>> Trainer::Parts::GatherInputPositions() {
  const std::vector<int64_t> local = feed->positions();
  if (train_data->global()) return local;  // every process walks the same global stream
  // Replica r contributes its own entry; the sum assembles them all.
  std::vector<Tensor> t;
  for (size_t r = 0; r < local.size(); ++r) {
    std::vector<int64_t> mine(static_cast<size_t>(total_replicas), 0);
    mine[static_cast<size_t>(first_replica) + r] = local[r];
    t.push_back(Tensor::FromVector(mine));
  }
  TROUPE_RETURN_IF_ERROR(comm->AllReduce(t, ReduceOp::kSum)->Wait());
  return std::vector<int64_t>(t[0].data<int64_t>(), t[0].data<int64_t>() + total_replicas);
}

Status Trainer::Parts::CheckFiniteState() const {
  for (const auto& [name, var] : replicas->model().NamedVariables()) {
    TROUPE_ASSIGN_OR_RETURN(Tensor host, gpu::ToHost(var.value()));
    if (host.dtype() != DType::kFloat32) continue;
    const float* v = host.data<float>();
    for (int64_t i = 0; i < host.num_elements(); ++i) {
      if (!std::isfinite(v[i])) {
        return InvalidArgumentError(
            "step " + std::to_string(step) + ": variable '" + name + "' holds " +
            std::to_string(v[i]) +
            "; no checkpoint was written (the latest one is still good). Lower "
            "optimizer.learning_rate, or set train.skip_nonfinite = true to skip such updates");
      }
    }
  }
  return Status::OK();
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

}  // namespace troupe::actors
