#include "launch/train_config.h"

#define TOML_EXCEPTIONS 0
#include <fcntl.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "graph/models/registry.h"

namespace troupe::launch {
namespace {

// One entry per accepted key: how to read it into the struct.
using Setter = std::function<Status(const toml::node&, const std::string& key, TrainConfig&)>;

Status TypeError(const std::string& key, const char* want, const toml::node& node) {
  std::ostringstream os;
  os << key << ": expected " << want << ", got " << node.type();
  return InvalidArgumentError(os.str());
}

Setter Int(int64_t TrainConfig::*field, int64_t min_value) {
  return [=](const toml::node& n, const std::string& key, TrainConfig& c) -> Status {
    auto v = n.value_exact<int64_t>();
    if (!v) return TypeError(key, "an integer", n);
    if (*v < min_value) {
      return InvalidArgumentError(key + ": must be >= " + std::to_string(min_value) + ", got " +
                                  std::to_string(*v));
    }
    c.*field = *v;
    return Status::OK();
  };
}

Setter Float(double TrainConfig::*field, double min_value, bool strictly_positive = false) {
  return [=](const toml::node& n, const std::string& key, TrainConfig& c) -> Status {
    auto v = n.value<double>();  // integers are accepted as floats
    if (!v || n.is_boolean()) return TypeError(key, "a number", n);
    if (*v < min_value || (strictly_positive && *v <= 0)) {
      return InvalidArgumentError(key + ": must be " + (strictly_positive ? "> " : ">= ") +
                                  std::to_string(min_value) + ", got " + std::to_string(*v));
    }
    c.*field = *v;
    return Status::OK();
  };
}

Setter Bool(bool TrainConfig::*field) {
  return [=](const toml::node& n, const std::string& key, TrainConfig& c) -> Status {
    auto v = n.value_exact<bool>();
    if (!v) return TypeError(key, "true or false", n);
    c.*field = *v;
    return Status::OK();
  };
}

Setter String(std::string TrainConfig::*field, std::vector<std::string> choices = {}) {
  return [=](const toml::node& n, const std::string& key, TrainConfig& c) -> Status {
    auto v = n.value_exact<std::string>();
    if (!v) return TypeError(key, "a string", n);
    if (!choices.empty() && std::find(choices.begin(), choices.end(), *v) == choices.end()) {
      std::string list;
      for (const auto& ch : choices) list += (list.empty() ? "" : ", ") + ch;
      return InvalidArgumentError(key + ": '" + *v + "' is not one of " + list);
    }
    c.*field = *v;
    return Status::OK();
  };
}

// model.name: a model of the registry (the zoo's, or one the program registered).
Setter ModelName() {
  return [](const toml::node& n, const std::string& key, TrainConfig& c) -> Status {
    auto v = n.value_exact<std::string>();
    if (!v) return TypeError(key, "a string", n);
    const std::vector<std::string> names = models::RegisteredModelNames();
    if (std::find(names.begin(), names.end(), *v) == names.end()) {
      std::string list;
      for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
      return InvalidArgumentError(key + ": '" + *v + "' is not one of " + list);
    }
    c.model = *v;
    return Status::OK();
  };
}

const std::map<std::string, Setter>& Schema() {
  static const auto* schema = new std::map<std::string, Setter>{
      {"job.name", String(&TrainConfig::name)},
      {"job.seed", Int(&TrainConfig::seed, INT64_MIN)},
      {"job.run_dir", String(&TrainConfig::run_dir)},
      {"model.name", ModelName()},
      {"data.source", String(&TrainConfig::data_source, {"fashion_mnist", "tfrecord"})},
      {"data.dir", String(&TrainConfig::data_dir)},
      {"data.shuffle_buffer", Int(&TrainConfig::shuffle_buffer, 0)},
      {"data.auto_shard", String(&TrainConfig::auto_shard, {"AUTO", "FILE", "DATA", "OFF"})},
      {"train.epochs", Int(&TrainConfig::epochs, 1)},
      {"train.max_steps", Int(&TrainConfig::max_steps, 0)},
      {"train.global_batch_size", Int(&TrainConfig::global_batch_size, 1)},
      {"train.replicas_per_process", Int(&TrainConfig::replicas_per_process, 1)},
      {"train.device", String(&TrainConfig::device, {"cpu", "gpu"})},
      {"train.replicas_per_gpu", Int(&TrainConfig::replicas_per_gpu, 1)},
      {"train.log_every", Int(&TrainConfig::log_every, 1)},
      {"train.skip_nonfinite", Bool(&TrainConfig::skip_nonfinite)},
      {"optimizer.name", String(&TrainConfig::optimizer, {"adam", "sgd"})},
      {"optimizer.learning_rate", Float(&TrainConfig::learning_rate, 0, true)},
      {"optimizer.momentum", Float(&TrainConfig::momentum, 0)},
      {"optimizer.beta_1", Float(&TrainConfig::beta_1, 0)},
      {"optimizer.beta_2", Float(&TrainConfig::beta_2, 0)},
      {"optimizer.epsilon", Float(&TrainConfig::epsilon, 0, true)},
      {"checkpoint.every_steps", Int(&TrainConfig::checkpoint_every_steps, 0)},
      {"checkpoint.max_to_keep", Int(&TrainConfig::max_to_keep, 1)},
      {"checkpoint.keep_every_n_hours", Float(&TrainConfig::keep_checkpoint_every_n_hours, 0)},
      {"collectives.deterministic", Bool(&TrainConfig::deterministic)},
      {"collectives.backend", String(&TrainConfig::collectives_backend, {"auto", "nccl"})},
      {"collectives.bucket_mib", Float(&TrainConfig::bucket_mib, 0, true)},
      {"collectives.timeout_s", Float(&TrainConfig::collective_timeout_s, 0, true)},
      {"control.heartbeat_interval_s", Float(&TrainConfig::heartbeat_interval_s, 0, true)},
      {"control.peer_timeout_s", Float(&TrainConfig::peer_timeout_s, 0, true)},
  };
  return *schema;
}

// Edit distance for "did you mean" hints.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

Status UnknownKey(const std::string& key, const std::string& origin) {
  std::string best;
  size_t best_d = 4;
  for (const auto& [known, setter] : Schema()) {
    size_t d = Distance(key, known);
    if (d < best_d) best_d = d, best = known;
  }
  std::string msg = origin + ": unknown key '" + key + "'";
  if (!best.empty()) msg += "; did you mean '" + best + "'?";
  return InvalidArgumentError(msg);
}

Status Apply(const toml::table& table, const std::string& prefix, const std::string& origin,
             TrainConfig& config) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) {
      if (!prefix.empty()) return UnknownKey(key, origin);
      TROUPE_RETURN_IF_ERROR(Apply(*sub, key, origin, config));
      continue;
    }
    auto it = Schema().find(key);
    if (it == Schema().end()) return UnknownKey(key, origin);
    TROUPE_RETURN_IF_ERROR(it->second(node, key, config).WithContext(origin));
  }
  return Status::OK();
}

std::string ParseErrorText(const toml::parse_error& e, const std::string& origin) {
  std::ostringstream os;
  os << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
     << e.description();
  return os.str();
}

}  // namespace

Result<TrainConfig> ParseTrainConfig(const std::string& text, const std::string& origin,
                                     const std::vector<std::string>& overrides) {
  TrainConfig config;
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) return InvalidArgumentError(ParseErrorText(parsed.error(), origin));
  TROUPE_RETURN_IF_ERROR(Apply(parsed.table(), "", origin, config));
  config.source_text = text;
  for (const std::string& o : overrides) {
    size_t eq = o.find('=');
    size_t dot = o.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      return InvalidArgumentError("--set '" + o + "': expected section.key=value");
    }
    std::string key = o.substr(0, eq);
    std::string value = o.substr(eq + 1);
    // Bare words are strings; anything TOML can parse keeps its type.
    toml::parse_result v = toml::parse("v = " + value, "--set " + key);
    if (!v) v = toml::parse("v = \"" + value + "\"", "--set " + key);
    if (!v) return InvalidArgumentError("--set '" + o + "': cannot parse the value");
    auto it = Schema().find(key);
    if (it == Schema().end()) return UnknownKey(key, "--set");
    TROUPE_RETURN_IF_ERROR(it->second(*v.table().get("v"), key, config).WithContext("--set"));
    config.source_text += "\n# --set " + o + "\n";
  }
  if (config.optimizer == "sgd" && (config.momentum < 0 || config.momentum >= 1)) {
    return InvalidArgumentError(origin + ": optimizer.momentum must be in [0, 1)");
  }
  if (config.collectives_backend == "nccl" && config.device != "gpu") {
    return InvalidArgumentError(origin +
                                ": collectives.backend = \"nccl\" needs train.device = \"gpu\"");
  }
  if (config.collectives_backend == "nccl" && config.replicas_per_process != 1) {
    return InvalidArgumentError(
        origin +
        ": collectives.backend = \"nccl\" runs one replica per process (NCCL refuses "
        "two ranks on one GPU); set train.replicas_per_process = 1 and start one "
        "process per GPU");
  }
  if (config.global_batch_size % config.replicas_per_process != 0) {
    return InvalidArgumentError(origin + ": train.global_batch_size (" +
                                std::to_string(config.global_batch_size) +
                                ") is not divisible by train.replicas_per_process (" +
                                std::to_string(config.replicas_per_process) +
                                "); choose a batch that is a multiple of the replica count");
  }
  return config;
}

Result<TrainConfig> LoadTrainConfig(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) return NotFoundError("config file '" + path + "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return ParseTrainConfig(text.str(), path, overrides);
}

Status ValidateTrainEnvironment(const TrainConfig& config, int64_t total_replicas) {
  namespace fs = std::filesystem;
  if (total_replicas < 1 || config.global_batch_size % total_replicas != 0) {
    return InvalidArgumentError(
        "train.global_batch_size (" + std::to_string(config.global_batch_size) +
        ") is not divisible by the job's " + std::to_string(total_replicas) +
        " replicas; choose a multiple of the replica count");
  }
  if (config.data_source == "fashion_mnist") {
    for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                          "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
      fs::path p = fs::path(config.data_dir) / f;
      if (!fs::exists(p)) {
        return NotFoundError("data.dir: dataset file '" + p.string() +
                             "' is missing; install it with `apt-get install "
                             "dataset-fashion-mnist` or point data.dir at the IDX files");
      }
    }
  } else if (!fs::is_directory(config.data_dir)) {
    return NotFoundError("data.dir: '" + config.data_dir + "' is not a directory of TFRecords");
  }
  // The run dir, or its nearest existing ancestor, must be writable; nothing is created here.
  fs::path dir = fs::absolute(config.run_dir);
  while (!fs::exists(dir) && dir.has_parent_path() && dir != dir.parent_path()) {
    dir = dir.parent_path();
  }
  if (fs::exists(dir) && !fs::is_directory(dir)) {
    return InvalidArgumentError("job.run_dir: '" + dir.string() +
                                "' exists and is not a directory");
  }
  // access() says yes to root everywhere; a probe file (removed at once) tells the truth.
  std::string probe = (dir / (".troupe-write-probe-" + std::to_string(::getpid()))).string();
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    return PermissionDeniedError("job.run_dir: '" + config.run_dir + "' is not writable (" +
                                 dir.string() + ": " + std::strerror(errno) +
                                 "); choose a writable directory");
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::OK();
}

}  // namespace troupe::launch
