#include "launch/config_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "graph/models/registry.h"
#include "input/data_source.h"

namespace troupe::launch {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

ConfigKey Key(std::string name, ConfigType type, std::string meaning) {
  ConfigKey k;
  k.name = std::move(name);
  k.type = type;
  k.meaning = std::move(meaning);
  return k;
}

ConfigKey Int(std::string name, int64_t TrainConfig::*field, double min, std::string meaning) {
  ConfigKey k = Key(std::move(name), ConfigType::kInt, std::move(meaning));
  k.min = min;
  k.store = [field](const ConfigValue& v, TrainConfig& c) { c.*field = std::get<int64_t>(v); };
  k.get = [field](const TrainConfig& c) -> ConfigValue { return c.*field; };
  return k;
}

// A number in [min, max), or in (min, max) with min_exclusive.
ConfigKey Float(std::string name, double TrainConfig::*field, double min, bool min_exclusive,
                double max, std::string meaning) {
  ConfigKey k = Key(std::move(name), ConfigType::kFloat, std::move(meaning));
  k.min = min;
  k.min_exclusive = min_exclusive;
  k.max = max;
  k.store = [field](const ConfigValue& v, TrainConfig& c) { c.*field = std::get<double>(v); };
  k.get = [field](const TrainConfig& c) -> ConfigValue { return c.*field; };
  return k;
}

ConfigKey Positive(std::string name, double TrainConfig::*field, std::string meaning) {
  return Float(std::move(name), field, 0, true, kInf, std::move(meaning));
}

ConfigKey NonNegative(std::string name, double TrainConfig::*field, std::string meaning) {
  return Float(std::move(name), field, 0, false, kInf, std::move(meaning));
}

ConfigKey Bool(std::string name, bool TrainConfig::*field, std::string meaning) {
  ConfigKey k = Key(std::move(name), ConfigType::kBool, std::move(meaning));
  k.store = [field](const ConfigValue& v, TrainConfig& c) { c.*field = std::get<bool>(v); };
  k.get = [field](const TrainConfig& c) -> ConfigValue { return c.*field; };
  return k;
}

ConfigKey String(std::string name, std::string TrainConfig::*field,
                 std::vector<std::string> choices, std::string meaning) {
  ConfigKey k = Key(std::move(name), ConfigType::kString, std::move(meaning));
  k.choices = std::move(choices);
  k.store = [field](const ConfigValue& v, TrainConfig& c) { c.*field = std::get<std::string>(v); };
  k.get = [field](const TrainConfig& c) -> ConfigValue { return c.*field; };
  return k;
}

ConfigKey OnlyWith(ConfigKey k, std::string key, std::string value, std::string why) {
  k.only_with = ConfigKey::Condition{std::move(key), std::move(value), std::move(why)};
  return k;
}

ConfigKey FromRegistry(ConfigKey k, std::function<std::vector<std::string>()> names) {
  k.choices_from = std::move(names);
  return k;
}

ConfigKey WithRefusalHint(ConfigKey k, std::string hint) {
  k.refusal_hint = std::move(hint);
  return k;
}

std::vector<ConfigKey> BuildSchema() {
  using C = TrainConfig;
  const std::string adam_only = "SGD does not use it";
  return {
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
             "A Keras 3 model to train instead of model.name: a .json file written by "
             "model.to_json() or a .keras file (Sequential or Functional)."),
      String("model.init_from", &C::init_from, {},
             "A checkpoint (prefix or directory) whose model weights a new run starts from: "
             "Keras' tf.train.Checkpoint(model=...) output or a Troupe run; a resumed run "
             "ignores it."),
      WithRefusalHint(
          FromRegistry(String("data.source", &C::data_source, {},
                              "Where examples come from: fashion_mnist reads the IDX files in "
                              "data.dir; text makes character-level language-model windows of "
                              "the files data.files matches."),
                       input::RegisteredDataSourceNames),
          "TFRecord sources are not supported yet: they come with sharded data (issue 19)"),
      OnlyWith(String("data.files", &C::data_files, {},
                      "text: a glob of plain text files, read in sorted order."),
               "data.source", "text", "only the text source reads files by glob"),
      OnlyWith(Int("data.sequence_length", &C::sequence_length, 1,
                   "text: characters per example (the model's context length)."),
               "data.source", "text", "only the text source makes sequences"),
      String("data.dir", &C::data_dir, {},
             "Directory of the dataset's files (Fashion-MNIST: the four IDX .gz files)."),
      Int("data.shuffle_buffer", &C::shuffle_buffer, 0,
          "Training examples in the shuffle buffer (0: no shuffling)."),
      String("data.auto_shard", &C::auto_shard, {"AUTO", "FILE", "DATA", "OFF"},
             "How input is split across processes (tf.data's AutoShardPolicy), as the "
             "coordinator assigns it."),
      Int("train.epochs", &C::epochs, 1, "Passes over the training set."),
      Int("train.max_steps", &C::max_steps, 0,
          "Stop after this many global steps, even mid-epoch (0: run all epochs)."),
      Int("train.global_batch_size", &C::global_batch_size, 1,
          "Examples per step over all replicas; the replica count must divide it."),
      Int("train.replicas_per_process", &C::replicas_per_process, 1,
          "Model replicas each process runs (the job's replicas: processes x this)."),
      String("train.device", &C::device, {"cpu", "gpu"}, "Where the replicas run."),
      Int("train.replicas_per_gpu", &C::replicas_per_gpu, 1,
          "With device = \"gpu\": replicas sharing one GPU (replica r of local rank L runs on "
          "gpu:(L x replicas_per_process + r) / replicas_per_gpu)."),
      Int("train.log_every", &C::log_every, 1,
          "Print and log (TensorBoard) loss, accuracy and examples/s every N steps."),
      Bool("train.skip_nonfinite", &C::skip_nonfinite,
           "A step whose loss or gradient is NaN/Inf skips its update (counted) instead of "
           "stopping the job."),
      String("optimizer.name", &C::optimizer, {"adam", "sgd"},
             "The optimizer (Keras' Adam or SGD)."),
      Positive("optimizer.learning_rate", &C::learning_rate, "Step size of every update."),
      OnlyWith(
          Float("optimizer.momentum", &C::momentum, 0, false, 1, "SGD's momentum (0: plain SGD)."),
          "optimizer.name", "sgd", "Adam has no momentum term; beta_1 plays that role"),
      OnlyWith(Float("optimizer.beta_1", &C::beta_1, 0, false, 1,
                     "Adam's decay rate of the running mean of gradients."),
               "optimizer.name", "adam", adam_only),
      OnlyWith(Float("optimizer.beta_2", &C::beta_2, 0, false, 1,
                     "Adam's decay rate of the running mean of squared gradients."),
               "optimizer.name", "adam", adam_only),
      OnlyWith(Positive("optimizer.epsilon", &C::epsilon,
                        "Adam's term added to the denominator for numerical stability."),
               "optimizer.name", "adam", adam_only),
      Int("checkpoint.every_steps", &C::checkpoint_every_steps, 0,
          "Write a checkpoint every N steps (0: only at the end and on SIGTERM/SIGINT)."),
      Int("checkpoint.max_to_keep", &C::max_to_keep, 1,
          "Newest checkpoints kept; older ones are deleted."),
      NonNegative("checkpoint.keep_every_n_hours", &C::keep_checkpoint_every_n_hours,
                  "Also keep one checkpoint per this many hours beyond max_to_keep (0: off)."),
      Bool("collectives.deterministic", &C::deterministic,
           "Reduce gradients in global replica order, so results are bit-equal across "
           "topologies (false: each backend's fastest order)."),
      String("collectives.backend", &C::collectives_backend, {"auto", "nccl"},
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
  };
}

const char* TypeName(const ConfigValue& v) {
  static const char* names[] = {"boolean", "integer", "floating-point", "string"};
  return names[v.index()];
}

std::string Number(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", u);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string Join(const std::vector<std::string>& items, const std::string& sep, bool quote) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + (quote ? Quoted(item) : item);
  return out;
}

Status CheckRange(const ConfigKey& key, double v) {
  const bool low = key.min_exclusive ? v <= key.min : v < key.min;
  if (!low && v < key.max && !std::isnan(v)) return Status::OK();
  std::string want =
      key.type == ConfigType::kInt ? "must be >= " + Number(key.min) : "must be a " + TypeText(key);
  return InvalidArgumentError(key.name + ": " + want + ", got " + Number(v));
}

Status CheckChoice(const ConfigKey& key, const std::string& v) {
  const std::vector<std::string> choices = ConfigChoices(key);
  if (choices.empty() || std::find(choices.begin(), choices.end(), v) != choices.end()) {
    return Status::OK();
  }
  std::string msg = key.name + ": '" + v + "' is not one of " + Join(choices, ", ", false);
  if (!key.refusal_hint.empty()) msg += "; " + key.refusal_hint;
  return InvalidArgumentError(msg);
}

}  // namespace

std::vector<std::string> ConfigChoices(const ConfigKey& key) {
  return key.choices_from ? key.choices_from() : key.choices;
}

const std::vector<ConfigKey>& ConfigSchema() {
  static const auto* schema = new std::vector<ConfigKey>(BuildSchema());
  return *schema;
}

const ConfigKey* FindConfigKey(std::string_view name) {
  for (const ConfigKey& k : ConfigSchema()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

Status SetConfigValue(const ConfigKey& key, const ConfigValue& value, TrainConfig& config) {
  ConfigValue v = value;
  switch (key.type) {
    case ConfigType::kInt:
      if (!std::holds_alternative<int64_t>(v)) break;
      TROUPE_RETURN_IF_ERROR(CheckRange(key, static_cast<double>(std::get<int64_t>(v))));
      key.store(v, config);
      return Status::OK();
    case ConfigType::kFloat:
      if (const int64_t* i = std::get_if<int64_t>(&v)) v = static_cast<double>(*i);
      if (!std::holds_alternative<double>(v)) break;
      TROUPE_RETURN_IF_ERROR(CheckRange(key, std::get<double>(v)));
      key.store(v, config);
      return Status::OK();
    case ConfigType::kBool:
      if (!std::holds_alternative<bool>(v)) break;
      key.store(v, config);
      return Status::OK();
    case ConfigType::kString:
      if (!std::holds_alternative<std::string>(v)) break;
      TROUPE_RETURN_IF_ERROR(CheckChoice(key, std::get<std::string>(v)));
      key.store(v, config);
      return Status::OK();
  }
  static const char* want[] = {"an integer", "a number", "true or false", "a string"};
  return InvalidArgumentError(key.name + ": expected " + want[static_cast<int>(key.type)] +
                              ", got " + TypeName(value));
}

std::string TypeText(const ConfigKey& key) {
  switch (key.type) {
    case ConfigType::kInt:
      return std::isinf(key.min) ? "integer" : "integer >= " + Number(key.min);
    case ConfigType::kFloat:
      if (!std::isinf(key.max)) {
        return "number in " + std::string(key.min_exclusive ? "(" : "[") + Number(key.min) + ", " +
               Number(key.max) + ")";
      }
      if (std::isinf(key.min)) return "number";
      return std::string("number ") + (key.min_exclusive ? "> " : ">= ") + Number(key.min);
    case ConfigType::kBool:
      return "true | false";
    case ConfigType::kString:
      return ConfigChoices(key).empty() ? "string" : Join(ConfigChoices(key), " | ", true);
  }
  return "?";
}

std::string ValueText(const ConfigValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&value)) {
    std::string s = Number(*d);
    // TOML reads "25" as an integer; a float needs a fraction or an exponent.
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
  }
  return Quoted(std::get<std::string>(value));
}

std::string FormatConfigKeys() {
  const TrainConfig defaults;
  std::ostringstream os;
  os << "Keys of a `troupe train` config: `key = value` in a [section] table of the TOML file,\n"
        "or `--set section.key=value`. Each line shows the default, then the type.\n";
  std::string section;
  for (const ConfigKey& k : ConfigSchema()) {
    std::string this_section = k.name.substr(0, k.name.find('.'));
    if (this_section != section) os << "\n";
    section = this_section;
    std::string head = k.name + " = " + ValueText(k.get(defaults));
    os << head << std::string(head.size() < 44 ? 44 - head.size() : 2, ' ') << TypeText(k);
    os << "\n    " << k.meaning;
    if (k.only_with) {
      os << " Only with " << k.only_with->key << " = " << Quoted(k.only_with->value) << ".";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace troupe::launch
