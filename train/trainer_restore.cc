// Trainer set-up steps: restoring the run dir (or initial weights) and the input positions.
#include <chrono>
#include <cstdio>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/object_checkpoint.h"
#include "core/env.h"
#include "core/logging.h"
#include "train/batches.h"
#include "train/internal/trainer_parts.h"
#include "train/internal/trainer_setup.h"
#include "train/keras_weights_init.h"

namespace troupe::train {
namespace {

// `dir` exists and holds an entry.
bool HasEntries(const std::string& dir) {
  Result<std::vector<std::string>> names = Env::Default()->GetChildren(dir);
  return names.ok() && !names->empty();
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
  if (p.launch.world_size > 1) TROUPE_RETURN_IF_ERROR(p.links.comm->Barrier()->Wait());
  TROUPE_RETURN_IF_ERROR(env->CreateDirectories(dir));
  ckpt::CheckpointManagerOptions mopts;
  mopts.directory = dir;
  mopts.max_to_keep = static_cast<int>(p.config.max_to_keep);
  if (p.config.keep_checkpoint_every_n_hours > 0) {
    mopts.keep_checkpoint_every_n_hours = p.config.keep_checkpoint_every_n_hours;
  }
  TROUPE_ASSIGN_OR_RETURN(p.run.manager,
                          ckpt::CheckpointManager::Create(&p.run.state->root(), mopts));
  return Status::OK();
}

// Sums across the job's replicas inside a step (synchronized BatchNormalization), through the
// host communicator; none when NCCL reduces on the GPU.
std::shared_ptr<CrossReplicaSummer> CrossReplicaSums(Trainer::Parts& p) {
  if (p.reduction.nccl) return nullptr;
  return std::make_shared<CrossReplicaSummer>(
      p.links.comm.get(), p.local_replicas,
      std::chrono::milliseconds(static_cast<int64_t>(p.config.collective_timeout_s * 1000)));
}

// Where a new run's weights come from: model.init_from, else the .keras file of model.keras
// unless model.init = "fresh"; no path: the initializers. Contradicting keys are
// FailedPrecondition (a configuration error).
struct InitialWeights {
  std::string key;  // the config key naming the file, for messages
  std::string path;
  // model.keras without model.init = "file": a .keras file without weights starts from the
  // initializers instead of failing.
  bool fresh_if_empty = false;
};

Result<InitialWeights> InitialWeightsOf(const TrainConfig& c) {
  const bool keras_file =
      c.model_keras.size() > 6 && c.model_keras.compare(c.model_keras.size() - 6, 6, ".keras") == 0;
  if (c.init != InitWeights::kAuto && !c.init_from.empty()) {
    return FailedPreconditionError("model.init = \"" + std::string(InitWeightsName(c.init)) +
                                   "\" and model.init_from = \"" + c.init_from +
                                   "\" both say where the weights come from; keep one");
  }
  if (c.init == InitWeights::kFile && !keras_file) {
    return FailedPreconditionError(
        "model.init = \"file\" takes the weights of model.keras's .keras file, and model.keras "
        "is " +
        (c.model_keras.empty() ? std::string("not set")
                               : "\"" + c.model_keras + "\" (a .json holds no weights)") +
        "; use a .keras file (model.save('m.keras')), or model.init_from for a weights file");
  }
  if (!c.init_from.empty()) return InitialWeights{"model.init_from", c.init_from, false};
  if (keras_file && c.init != InitWeights::kFresh) {
    return InitialWeights{"model.keras", c.model_keras, c.init != InitWeights::kFile};
  }
  return InitialWeights{};
}

// The model weights of a Keras weights file (.weights.h5, or a .keras file's), all or nothing
// (train/keras_weights_init.h).
Status InitFromKerasWeights(Trainer::Parts& p, const InitialWeights& from) {
  Result<ckpt::KerasWeightsH5> file = ReadKerasWeightsFile(from.path);
  auto holds_layers = [](const ckpt::KerasWeightsH5& f) {
    auto it = f.tensors.lower_bound("layers/");
    return it != f.tensors.end() && it->first.rfind("layers/", 0) == 0;
  };
  const bool no_weights = file.ok() && !holds_layers(*file);
  if (from.fresh_if_empty &&
      ((!file.ok() && file.status().code() == StatusCode::kNotFound) || no_weights)) {
    // A .keras saved before the model was built holds no weights: initializers, as Keras.
    if (p.launch.rank == 0) {
      std::printf("model.keras %s holds no weights: starting from initial values\n",
                  from.path.c_str());
    }
    return Status::OK();
  }
  if (!file.ok()) return file.status().WithContext(from.key);
  TROUPE_ASSIGN_OR_RETURN(std::vector<nn::KerasLayer> layers,
                          p.run.replicas->model().KerasLayers());
  Result<KerasWeightsRestore> restored =
      RestoreKerasWeights(layers, *file, from.path, KerasH5Keys(p.run.replicas->model()));
  if (!restored.ok()) return restored.status().WithContext(from.key);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  p.run.initial_weights = from.path;
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
  root.Track("model", p.run.state->model_layout());
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
  p.run.initial_weights = path;
  return Status::OK();
}

// The positions the restored checkpoint recorded (none for a new run), checked against the
// pipelines this run builds: input that cannot continue exactly is refused, never replaced.
Result<std::vector<int64_t>> RestoredPositions(Trainer::Parts& p) {
  if (p.run.resumed_from.empty()) return std::vector<int64_t>{};
  TROUPE_ASSIGN_OR_RETURN(input::IteratorState state, p.run.state->iterator_state());
  Result<input::InputPositions> saved = input::DecodeInputPositions(state);
  const TrainingData& d = *p.input.train_data;
  const size_t pipelines = d.global() ? 1 : static_cast<size_t>(p.total_replicas);
  if (saved.status().code() == StatusCode::kNotFound && d.global()) {
    // Written before per-replica input: the same global stream, one batch per step.
    return std::vector<int64_t>{p.step};
  }
  if (!saved.ok()) {
    return FailedPreconditionError(
        "cannot resume from " + p.run.resumed_from + ": " + saved.status().message() +
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
    return input::PlaceDataKeys(
        FailedPreconditionError("cannot resume from " + p.run.resumed_from +
                                " with the same data: " + why +
                                "; restore the old settings or start over with --fresh --force"),
        "data", kLoopDataKeys);
  }
  return saved->positions;
}

}  // namespace

// The model, optimizer and checkpoint state, restored from the newest checkpoint of the run
// dir that reads back cleanly (nothing restored for a new run). A checkpoint written for
// another model, global batch or optimizer is refused naming both.
Status RestoreRunDir(Trainer::Parts& p) {
  std::vector<int64_t> ids;
  for (int g : p.links.group.local_replica_ids()) ids.push_back(g);
  auto job_min = [&p](int64_t local) { return MinOverJob(*p.links.comm, local); };
  TROUPE_ASSIGN_OR_RETURN(TrainingData data,
                          OpenTrainingData(p.config, p.total_replicas, std::move(ids), job_min));
  p.input.train_data = std::make_unique<TrainingData>(std::move(data));
  Result<std::unique_ptr<ModelReplicas>> replicas =
      ModelReplicas::Create(p.config, p.devices, p.input.train_data->source.feature_shape,
                            p.input.train_data->source.num_classes, CrossReplicaSums(p));
  if (!replicas.ok()) return ModelConfigError(replicas.status());
  p.run.replicas = *std::move(replicas);
  TROUPE_ASSIGN_OR_RETURN(p.run.job_generator, random::Generator::FromSeed(
                                                   p.config.seed, random::RngAlgorithm::kPhilox));
  JobShape shape{p.total_replicas, p.config.global_batch_size, p.run.replicas->model_label(),
                 nn::OptimizerLabel(p.config.optimizer), p.config.name};
  TROUPE_ASSIGN_OR_RETURN(
      p.run.state,
      TrainState::Create(p.run.replicas->model(), p.run.replicas->optimizer(),
                         p.run.job_generator->state(), shape, p.run.replicas->loss_scale()));
  // A new run takes init_from's weights before it writes anything, so a checkpoint that does
  // not fit leaves the run dir as it was.
  const std::string dir = CheckpointDir(p.config);
  const bool had_checkpoints = !p.launch.fresh && HasEntries(dir);
  TROUPE_RETURN_IF_ERROR(InitialWeightsOf(p.config).status());  // contradictions, even resuming
  if (!had_checkpoints) TROUPE_RETURN_IF_ERROR(InitFromCheckpoint(p));
  TROUPE_RETURN_IF_ERROR(PrepareCheckpointDir(p));
  if (!p.run.manager->checkpoints().empty()) {
    TROUPE_RETURN_IF_ERROR(CheckRecordedJob(p.run.manager->checkpoints().back(), shape));
  }
  TROUPE_ASSIGN_OR_RETURN(p.run.resumed_from, RestoreLatestValid(*p.run.state, *p.run.manager));
  if (p.run.resumed_from.empty()) return had_checkpoints ? InitFromCheckpoint(p) : Status::OK();
  const JobShape saved = p.run.state->job();
  if (saved.model != shape.model || saved.global_batch_size != shape.global_batch_size ||
      saved.optimizer != shape.optimizer) {
    return FailedPreconditionError(
        "cannot resume from " + p.run.resumed_from + ": it was written for model '" + saved.model +
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
  p.step = p.run.state->step();
  TROUPE_RETURN_IF_ERROR(ApplyConfigLearningRate(p.run.replicas->optimizer(),
                                                 p.config.optimizer.learning_rate,
                                                 p.run.resumed_from, p.chief)
                             .status());
  TROUPE_ASSIGN_OR_RETURN(
      p.run.job_generator,
      random::Generator::FromState(p.run.state->generator_state(), random::RngAlgorithm::kPhilox));
  return Status::OK();
}

// This process's input feed, at the positions the restored checkpoint recorded.
Status OpenTrainingStream(Trainer::Parts& p) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> positions, RestoredPositions(p));
  TROUPE_ASSIGN_OR_RETURN(p.input.feed, StartFeed(p.config, *p.input.train_data, positions,
                                                  p.step * p.accumulate_steps));
  return Status::OK();
}
}  // namespace troupe::train
