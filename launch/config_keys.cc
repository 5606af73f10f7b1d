// The keys of `troupe train`'s config, table by table, in the order `troupe config keys`
// lists them, built from small helpers that tie each key to its TrainConfig field and state
// its type, range, choices and conditions (config_schema.h states the contract).
#include "launch/config_keys.h"

#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "graph/models/registry.h"
#include "graph/nn/compiled_loss.h"
#include "graph/nn/optimizer_registry.h"
#include "graph/precision.h"
#include "input/data_source.h"
#include "launch/component_keys.h"

namespace troupe::launch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Where a key's value lives: a TrainConfig member, a member of one of its members or one level
// deeper (core/config_key.h).
template <class T>
using Field = config::Field<TrainConfig, T>;

// launch/'s own keys are core/config_key.h's, on TrainConfig.
ConfigKey Launch(config::SpecKey<TrainConfig> key) {
  ConfigKey k;
  static_cast<config::SpecKey<TrainConfig>&>(k) = std::move(key);
  return k;
}

template <class T>
ConfigKey Key(std::string name, ConfigType type, Field<T> field, std::string meaning) {
  return Launch(
      config::Key<TrainConfig, T>(std::move(name), type, std::move(field), std::move(meaning)));
}

ConfigKey Int(std::string name, Field<int64_t> field, double min, std::string meaning) {
  return Launch(
      config::Int<TrainConfig>(std::move(name), std::move(field), min, std::move(meaning)));
}

// A list of integers, each >= min.
ConfigKey IntList(std::string name, Field<std::vector<int64_t>> field, double min,
                  std::string meaning) {
  return Launch(
      config::IntList<TrainConfig>(std::move(name), std::move(field), min, std::move(meaning)));
}

ConfigKey StringList(std::string name, Field<std::vector<std::string>> field, std::string meaning) {
  return Launch(
      config::StringList<TrainConfig>(std::move(name), std::move(field), std::move(meaning)));
}

// A list of numbers, each in [min, max).
ConfigKey FloatList(std::string name, Field<std::vector<double>> field, double min,
                    std::string meaning) {
  return Launch(
      config::FloatList<TrainConfig>(std::move(name), std::move(field), min, std::move(meaning)));
}

// A number in [min, max), or in (min, max) with min_exclusive.
ConfigKey Float(std::string name, Field<double> field, double min, bool min_exclusive, double max,
                std::string meaning) {
  return Launch(config::Float<TrainConfig>(std::move(name), std::move(field), min, min_exclusive,
                                           max, std::move(meaning)));
}

ConfigKey Positive(std::string name, Field<double> field, std::string meaning) {
  return Float(std::move(name), std::move(field), 0, true, kInf, std::move(meaning));
}

ConfigKey NonNegative(std::string name, Field<double> field, std::string meaning) {
  return Float(std::move(name), std::move(field), 0, false, kInf, std::move(meaning));
}

// A number >= 0 whose field is optional: unset until a config gives it.
ConfigKey OptionalNonNegative(std::string name, Field<std::optional<double>> field,
                              std::string meaning) {
  return Launch(config::OptionalNonNegative<TrainConfig>(std::move(name), std::move(field),
                                                         std::move(meaning)));
}

ConfigKey Bool(std::string name, Field<bool> field, std::string meaning) {
  return Launch(config::Bool<TrainConfig>(std::move(name), std::move(field), std::move(meaning)));
}

// A true/false whose field is optional: unset until a config gives it.
ConfigKey OptionalBool(std::string name, Field<std::optional<bool>> field, std::string meaning) {
  return Launch(
      config::OptionalBool<TrainConfig>(std::move(name), std::move(field), std::move(meaning)));
}

ConfigKey String(std::string name, Field<std::string> field, std::vector<std::string> choices,
                 std::string meaning) {
  return Launch(config::String<TrainConfig>(std::move(name), std::move(field), std::move(choices),
                                            std::move(meaning)));
}

// A string key stored as an enum: `values` are the accepted ones, each spelled by `name_of`
// (the enum's own name function, so no spelling is written twice).
template <class E>
ConfigKey Enum(std::string name, Field<E> field, std::vector<E> values,
               std::string_view (*name_of)(E), std::string meaning) {
  ConfigKey k;
  k.name = std::move(name);
  k.type = ConfigType::kString;
  k.meaning = std::move(meaning);
  for (E v : values) k.choices.emplace_back(name_of(v));
  k.store = [field, values, name_of](const ConfigValue& v, TrainConfig& c) {
    for (E e : values) {
      if (name_of(e) == std::get<std::string>(v)) field(c) = e;
    }
  };
  k.get = [field, name_of](const TrainConfig& c) -> ConfigValue {
    return std::string(name_of(field(c)));
  };
  return k;
}

ConfigKey OnlyWith(ConfigKey k, std::string key, std::vector<std::string> values, std::string why) {
  k.only_with = ConfigKey::Condition{std::move(key), std::move(values), std::move(why)};
  return k;
}

ConfigKey FromRegistry(ConfigKey k, std::function<std::vector<std::string>()> names) {
  k.choices_from = std::move(names);
  return k;
}

ConfigKey WithCheck(ConfigKey k, std::function<std::string(const ConfigValue&)> check) {
  k.extra_check = std::move(check);
  return k;
}

// A kIntList check: the list has one of `sizes` entries; `want` says so ("empty or [height,
// width]").
std::function<std::string(const ConfigValue&)> ListSizeIn(std::vector<size_t> sizes,
                                                          std::string want) {
  return [sizes = std::move(sizes), want = std::move(want)](const ConfigValue& v) {
    const size_t n = std::get<std::vector<int64_t>>(v).size();
    if (std::find(sizes.begin(), sizes.end(), n) != sizes.end()) return std::string();
    return "must be " + want + ", got " + ValueText(v);
  };
}

// "" (the default: a .keras file's compiled loss, else sparse_categorical_crossentropy) and
// Keras' loss names.
std::vector<std::string> LossChoices() {
  std::vector<std::string> choices = {""};
  for (const std::string& name : nn::LossKindNames()) choices.push_back(name);
  return choices;
}

// [job] and [model].
std::vector<ConfigKey> JobAndModelKeys() {
  using C = TrainConfig;
  std::vector<ConfigKey> keys = {
      String("job.name", &C::name, {},
             "Name of the run: the start-up line, TensorBoard file names, checkpoints and "
             "<run_dir>/config.toml."),
      Int("job.seed", &C::seed, -kInf,
          "Seeds the initial weights, the shuffle order and the job's random generator."),
      String("job.run_dir", &C::run_dir, {},
             "Holds checkpoints/, events/ (TensorBoard) and config.toml; a run dir with "
             "checkpoints resumes from them."),
      FromRegistry(String("model.name", &C::model, {},
                          "The model to train: one of the zoo's or one the program registered "
                          "(graph/models/registry.h)."),
                   models::RegisteredModelNames),
      String("model.keras", &C::model_keras, {},
             "A Keras 3 model to train instead of model.name (setting both is an error): a "
             ".json file written by model.to_json() or a .keras file (Sequential or "
             "Functional)."),
      String("model.init_from", &C::init_from, {},
             "A checkpoint (prefix or directory) whose model weights a new run starts from: "
             "Keras' tf.train.Checkpoint(model=...) output or a Troupe run; or a Keras "
             ".keras or .weights.h5 file (layers matched by name, else by class and position "
             "as Keras' load_weights). A resumed run ignores it."),
      Enum<train::InitWeights>(
          "model.init", &C::init, {train::InitWeights::kFile, train::InitWeights::kFresh},
          train::InitWeightsName,
          "With a .keras model.keras: \"file\" starts a new run from the file's weights, "
          "\"fresh\" from the initializers. Unset: \"file\" when the file holds weights "
          "and model.init_from is not set. A resumed run ignores it."),
      String("model.loss", &C::loss, LossChoices(),
             "The loss, by Keras' name: sparse_categorical_crossentropy, "
             "categorical_crossentropy (of the one-hot labels), binary_crossentropy, "
             "mse, mae or huber. Empty: the loss a .keras file was compiled with, "
             "else sparse_categorical_crossentropy."),
      OptionalBool("model.from_logits", &C::from_logits,
                   "Whether a cross-entropy takes the model's outputs as logits (true) or as "
                   "probabilities (false: clipped to [1e-7, 1 - 1e-7], Keras' default). Unset: "
                   "the compiled loss's setting in a .keras file, else true. An output layer "
                   "with a softmax or sigmoid activation is always scored on its logits, as "
                   "Keras does."),
  };
  // The keys registered models declare (graph/models/registry.h), each only with its model.
  for (ConfigKey& k :
       ComponentKeys(models::RegisteredModelKeys(), "model", &C::model_options, "model.name")) {
    keys.push_back(std::move(k));
  }
  return keys;
}

// The sources of `names` as prose: "the text source", "the text and lines sources".
std::string Sources(const std::vector<std::string>& names) {
  std::string out = "the ";
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  }
  return out + (names.size() == 1 ? " source" : " sources");
}

// [data]: the keys every data source takes, each registered source's own
// (input/data_source.h), then the training loop's input and augmentation keys.
std::vector<ConfigKey> DataKeys() {
  using C = TrainConfig;
  std::vector<ConfigKey> keys = PlaceKeys(input::CommonDataKeys(), "data", &C::data);
  std::vector<std::pair<std::string, std::vector<input::DataKey>>> sources;
  std::vector<std::string> image_sources, imageless;
  for (const auto& [name, source] : input::RegisteredDataSources()) {
    sources.emplace_back(name, source.keys);
    (source.images ? image_sources : imageless).push_back(name);
  }
  for (ConfigKey& k : ComponentKeys(sources, "data", &C::data, "data.source")) {
    keys.push_back(std::move(k));
  }
  const std::string no_images =
      Sources(imageless) + (imageless.size() == 1 ? " has" : " have") + " no images";
  std::vector<ConfigKey> loop = {
      Int("data.shuffle_buffer", &C::shuffle_buffer, 0,
          "Training examples in the shuffle buffer (0: no shuffling)."),
      Enum<input::AutoShardPolicy>(
          "data.auto_shard", &C::auto_shard,
          {input::AutoShardPolicy::kAuto, input::AutoShardPolicy::kFile,
           input::AutoShardPolicy::kData, input::AutoShardPolicy::kOff},
          input::AutoShardPolicyName,
          "How input is split across processes (tf.data's AutoShardPolicy), as the "
          "coordinator assigns it."),
      Int("data.prefetch", &C::prefetch, 1, "Batches each replica's input thread keeps ready."),
      OnlyWith(WithCheck(IntList("data.augment.resize", &C::resize, 1,
                                 "Resize training images to [height, width] (bilinear) before "
                                 "the other augmentations ([]: off)."),
                         ListSizeIn({0, 2}, "empty or [height, width]")),
               "data.source", image_sources, no_images),
      OnlyWith(Int("data.augment.random_crop_padding", &C::random_crop_padding, 0,
                   "Pad training images by this many pixels, then crop back at a random "
                   "offset (0: off)."),
               "data.source", image_sources, no_images),
      OnlyWith(Bool("data.augment.random_flip", &C::random_flip,
                    "Flip training images left-right with probability 1/2."),
               "data.source", image_sources, no_images),
  };
  keys.insert(keys.end(), std::make_move_iterator(loop.begin()),
              std::make_move_iterator(loop.end()));
  return keys;
}

// [train].
std::vector<ConfigKey> TrainKeys() {
  using C = TrainConfig;
  const std::vector<std::string> schedules = {"constant",    "cosine",       "piecewise",
                                              "exponential", "inverse_time", "polynomial"};
  return {
      Int("train.epochs", &C::epochs, 1, "Passes over the training set."),
      Int("train.max_steps", &C::max_steps, 0,
          "Stop after this many global steps, even mid-epoch (0: run all epochs)."),
      Int("train.global_batch_size", &C::global_batch_size, 1,
          "Examples per step over all replicas; the replica count must divide it."),
      Int("train.replicas_per_process", &C::replicas_per_process, 0,
          "Model replicas each process runs (the job's replicas: processes x this). 0, the "
          "default, is auto: on CPUs one per core of the process's share up to 2, then one "
          "per two cores, the most that divide the global batch into per-replica batches of "
          "2 or more; on GPUs 1. The count is part of the math (per-replica BatchNorm "
          "statistics, reduction order): set it to get the same bits on machines with other "
          "core counts."),
      Int("train.intra_op_threads", &C::intra_op_threads, 0,
          "Threads that run a process's kernels, shared by its replicas (0: the process's "
          "share of the cores its affinity mask and cgroup quota allow; TROUPE_NUM_THREADS "
          "overrides 0). The bits do not depend on it."),
      Int("train.accumulate_steps",
          {&C::optimizer, &nn::OptimizerConfig::gradient_accumulation_steps}, 1,
          "Micro-batches of train.global_batch_size per update: their gradients are summed "
          "locally and allreduced once, as Keras' gradient_accumulation_steps averages them "
          "(schedules count micro-batches, as Keras')."),
      Enum<Device::Type>("train.device", &C::device, {Device::Type::kCpu, Device::Type::kGpu},
                         Device::TypeName, "Where the replicas run."),
      Int("train.replicas_per_gpu", &C::replicas_per_gpu, 1,
          "With device = \"gpu\": replicas sharing one GPU (replica r of local rank L runs on "
          "gpu:(L x replicas_per_process + r) / replicas_per_gpu)."),
      Int("train.log_every", &C::log_every, 1,
          "Print and log (TensorBoard) loss, accuracy and examples/s every N steps."),
      Enum<train::ProgressStyle>(
          "train.progress", &C::progress,
          {train::ProgressStyle::kAuto, train::ProgressStyle::kBar, train::ProgressStyle::kPlain},
          train::ProgressStyleName,
          "How progress lines are printed: \"bar\" redraws one line in place, \"plain\" "
          "prints each as a line of its own without control characters (for logs); "
          "\"auto\" is \"bar\" on a terminal and \"plain\" when stdout is a pipe or "
          "file or a launcher (mpirun, srun) started the process."),
      Bool("train.skip_nonfinite", &C::skip_nonfinite,
           "A step whose loss or gradient is NaN/Inf skips its update (counted) instead of "
           "stopping the job."),
      Int("train.eval_every_steps", &C::eval_every_steps, 0,
          "Also evaluate on the test split every N steps (0: at epoch ends only; the last step "
          "always evaluates)."),
      Float("train.label_smoothing", &C::label_smoothing, 0, false, 1,
            "Label smoothing of the cross-entropy in [0, 1): one-hot labels become "
            "y * (1 - ls) + ls / classes, as Keras' CategoricalCrossentropy(label_smoothing); "
            "the test loss is smoothed too (Keras' evaluate)."),
      Enum<DType>(
          "train.precision", &C::precision, {DType::kFloat32, DType::kBFloat16, DType::kHalf},
          PrecisionPolicyName,
          "Keras' dtype policy: compute in bfloat16/float16 (emulated on CPUs: float32 "
          "arithmetic on rounded operands, rounded results), variables and optimizer in "
          "float32; BatchNormalization, LayerNormalization, Embedding, attention softmax and "
          "the loss stay float32 as in Keras. A model.keras saved under a mixed policy "
          "trains under it when this key is not given; given, it must match."),
  };
}

// [optimizer]: the update rule (the registered optimizers' own keys, graph/nn/
// optimizer_registry.h), its schedule, clipping and averaging.
std::vector<ConfigKey> OptimizerKeys() {
  using C = TrainConfig;
  using O = nn::OptimizerConfig;
  using S = nn::ScheduleConfig;
  const std::vector<std::string> schedules = {"constant",    "cosine",       "piecewise",
                                              "exponential", "inverse_time", "polynomial"};
  const std::vector<std::string> decaying = {"cosine", "exponential", "inverse_time", "polynomial"};
  const std::string no_decay_steps = "the schedule has no decay_steps";
  const std::string cosine_only = "only the cosine schedule has it";
  const std::string piecewise_only = "only the piecewise schedule has it";
  const std::string polynomial_only = "only the polynomial schedule has it";
  const std::string ema_only = "only the average has it";
  std::vector<ConfigKey> keys = {
      FromRegistry(String("optimizer.name", {&C::optimizer, &O::name}, {},
                          "The optimizer, by its registered name: Keras 3's, update for update, "
                          "or one the program registered (graph/nn/optimizer_registry.h)."),
                   nn::RegisteredOptimizerNames),
      NonNegative("optimizer.learning_rate", {&C::optimizer, &O::learning_rate},
                  "Step size of every update (a schedule's initial learning rate; 0 only as "
                  "the start of a cosine warmup). A resumed run applies a changed value, saying "
                  "so when the checkpoint held another."),
  };
  std::vector<std::pair<std::string, std::vector<nn::OptimizerKey>>> optimizers;
  std::string decay_defaults = "none";  // "none; adamw: 0.004"
  for (const auto& [name, def] : nn::RegisteredOptimizers()) {
    optimizers.emplace_back(name, def.keys);
    if (def.default_weight_decay) {
      decay_defaults += "; " + name + ": " + ValueText(*def.default_weight_decay) + ", as Keras";
    }
  }
  for (ConfigKey& k : ComponentKeys(optimizers, "optimizer", &C::optimizer, "optimizer.name")) {
    keys.push_back(std::move(k));
  }
  std::vector<ConfigKey> common = {
      OptionalNonNegative("optimizer.weight_decay", {&C::optimizer, &O::weight_decay},
                          "Decoupled weight decay w -= w x weight_decay x lr before each update "
                          "(unset: " +
                              decay_defaults + ")."),
      StringList("optimizer.no_decay", {&C::optimizer, &O::no_decay},
                 "Regexes searched in each variable's path (\"dense_1/bias\"); a match gets "
                 "no weight decay."),
      NonNegative("optimizer.clipnorm", {&C::optimizer, &O::clipnorm},
                  "Clip each gradient tensor to this L2 norm (0: off)."),
      NonNegative("optimizer.global_clipnorm", {&C::optimizer, &O::global_clipnorm},
                  "Clip all gradients together to this global L2 norm (0: off)."),
      NonNegative("optimizer.clipvalue", {&C::optimizer, &O::clipvalue},
                  "Clip each gradient element to [-clipvalue, clipvalue] (0: off)."),
      Bool("optimizer.ema", {&C::optimizer, &O::use_ema},
           "Keep an exponential moving average of the weights (in the checkpoint)."),
      OnlyWith(Float("optimizer.ema_momentum", {&C::optimizer, &O::ema_momentum}, 0, false, 1,
                     "With optimizer.ema: the average's momentum."),
               "optimizer.ema", {"true"}, ema_only),
      OnlyWith(
          Int("optimizer.ema_overwrite_frequency", {&C::optimizer, &O::ema_overwrite_frequency}, 0,
              "With optimizer.ema: overwrite the weights with their average every N updates "
              "(0: never)."),
          "optimizer.ema", {"true"}, ema_only),
      String("optimizer.schedule.kind", {&C::optimizer, &O::schedule, &S::kind}, schedules,
             "Learning-rate schedule (Keras' CosineDecay, PiecewiseConstantDecay, "
             "ExponentialDecay, InverseTimeDecay, PolynomialDecay); constant: none."),
      OnlyWith(
          Int("optimizer.schedule.warmup_steps", {&C::optimizer, &O::schedule, &S::warmup_steps}, 0,
              "Cosine: linear warmup steps from learning_rate to warmup_target (which "
              "it needs)."),
          "optimizer.schedule.kind", {"cosine"}, cosine_only),
      OnlyWith(OptionalNonNegative("optimizer.schedule.warmup_target",
                                   {&C::optimizer, &O::schedule, &S::warmup_target},
                                   "Cosine: the rate warmup reaches and decay starts from "
                                   "(unset: no warmup)."),
               "optimizer.schedule.kind", {"cosine"}, cosine_only),
      OnlyWith(Int("optimizer.schedule.decay_steps", {&C::optimizer, &O::schedule, &S::decay_steps},
                   1, "Steps of the decay."),
               "optimizer.schedule.kind", decaying, no_decay_steps),
      OnlyWith(Float("optimizer.schedule.alpha", {&C::optimizer, &O::schedule, &S::alpha}, 0, false,
                     1, "Cosine: the floor, as a fraction of the rate decayed from."),
               "optimizer.schedule.kind", {"cosine"}, cosine_only),
      OnlyWith(
          IntList("optimizer.schedule.boundaries", {&C::optimizer, &O::schedule, &S::boundaries}, 0,
                  "Piecewise: steps where the value changes (strictly increasing; a "
                  "boundary step still has the earlier value)."),
          "optimizer.schedule.kind", {"piecewise"}, piecewise_only),
      OnlyWith(FloatList("optimizer.schedule.values", {&C::optimizer, &O::schedule, &S::values}, 0,
                         "Piecewise: the learning rates, one more than boundaries."),
               "optimizer.schedule.kind", {"piecewise"}, piecewise_only),
      OnlyWith(
          Positive("optimizer.schedule.decay_rate", {&C::optimizer, &O::schedule, &S::decay_rate},
                   "Exponential: lr x rate^(step/decay_steps); inverse_time: lr / (1 + "
                   "rate x step/decay_steps)."),
          "optimizer.schedule.kind", {"exponential", "inverse_time"},
          "only exponential and inverse_time have a decay rate"),
      OnlyWith(Bool("optimizer.schedule.staircase", {&C::optimizer, &O::schedule, &S::staircase},
                    "Decay in whole multiples of decay_steps."),
               "optimizer.schedule.kind", {"exponential", "inverse_time"},
               "only exponential and inverse_time have a staircase"),
      OnlyWith(NonNegative("optimizer.schedule.end_learning_rate",
                           {&C::optimizer, &O::schedule, &S::end_learning_rate},
                           "Polynomial: the rate reached after decay_steps."),
               "optimizer.schedule.kind", {"polynomial"}, polynomial_only),
      OnlyWith(NonNegative("optimizer.schedule.power", {&C::optimizer, &O::schedule, &S::power},
                           "Polynomial: the decay's exponent."),
               "optimizer.schedule.kind", {"polynomial"}, polynomial_only),
      OnlyWith(Bool("optimizer.schedule.cycle", {&C::optimizer, &O::schedule, &S::cycle},
                    "Polynomial: restart the decay every decay_steps instead of staying at the "
                    "end."),
               "optimizer.schedule.kind", {"polynomial"}, polynomial_only),
  };
  keys.insert(keys.end(), std::make_move_iterator(common.begin()),
              std::make_move_iterator(common.end()));
  return keys;
}

// [checkpoint], [collectives] and [control].
std::vector<ConfigKey> RunKeys() {
  using C = TrainConfig;
  return {
      Int("checkpoint.every_steps", &C::checkpoint_every_steps, 0,
          "Write a checkpoint every N steps (0: only at the end and on SIGTERM/SIGINT)."),
      Int("checkpoint.max_to_keep", &C::max_to_keep, 1,
          "Newest checkpoints kept; older ones are deleted."),
      NonNegative("checkpoint.keep_every_n_hours", &C::keep_checkpoint_every_n_hours,
                  "Also keep one checkpoint per this many hours beyond max_to_keep (0: off)."),
      Enum<train::TestMetric>(
          "checkpoint.keep_best", &C::keep_best,
          {train::TestMetric::kNone, train::TestMetric::kAccuracy, train::TestMetric::kLoss,
           train::TestMetric::kTop5Accuracy, train::TestMetric::kPerplexity},
          train::TestMetricName,
          "Keep the best checkpoint by this test metric in <run_dir>/checkpoints/best "
          "(best.json names it; \"\": off); needs a test split."),
      Bool("collectives.deterministic", &C::deterministic,
           "Reduce gradients in global replica order, so results are bit-equal across "
           "topologies (false: each backend's fastest order)."),
      Enum<train::CollectivesBackend>(
          "collectives.backend", &C::collectives_backend,
          {train::CollectivesBackend::kAuto, train::CollectivesBackend::kNccl},
          train::CollectivesBackendName,
          "auto: in-process, shared memory or MPI, reduced on the host; nccl: NCCL on the "
          "GPU (device = \"gpu\", one replica per process)."),
      Positive("collectives.bucket_mib", &C::bucket_mib,
               "Gradients are reduced in buckets of this many MiB."),
      Positive("collectives.timeout_s", &C::collective_timeout_s,
               "A collective waiting this long for its peers fails the job."),
      Positive("control.heartbeat_interval_s", &C::heartbeat_interval_s,
               "Seconds between each worker's heartbeats to the coordinator."),
      Positive("control.peer_timeout_s", &C::peer_timeout_s,
               "A process silent this long is lost and the job stops, naming it."),
      String("control.advertise_interface", &C::advertise_interface, {},
             "Rank 0 advertises this network interface's IPv4 as the coordinator's address "
             "(\"\": MPI's btl_tcp_if_include, else the default route's interface, else the "
             "first non-loopback interface up; the host name only when none has IPv4)."),
      String("control.advertise_address", &C::advertise_address, {},
             "Rank 0 advertises exactly this address (an IP or a name every host resolves) "
             "as the coordinator's (not together with advertise_interface)."),
  };
}

}  // namespace

size_t RegisteredComponents() {
  return input::RegisteredDataSourceNames().size() + nn::RegisteredOptimizerNames().size() +
         models::RegisteredModelNames().size();
}

std::vector<ConfigKey> BuildConfigSchema() {
  std::vector<ConfigKey> keys;
  for (auto table : {JobAndModelKeys, DataKeys, TrainKeys, OptimizerKeys, RunKeys}) {
    std::vector<ConfigKey> part = table();
    keys.insert(keys.end(), std::make_move_iterator(part.begin()),
                std::make_move_iterator(part.end()));
  }
  return keys;
}

}  // namespace troupe::launch
