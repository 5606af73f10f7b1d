#include "launch/train_config.h"

#define TOML_EXCEPTIONS 0
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <type_traits>

#include "core/env.h"
#include "graph/keras/model_json.h"
#include "graph/precision.h"
#include "input/data_source.h"
#include "launch/config_schema.h"

namespace troupe::launch {
namespace {

// Where each key present in the config was set: the file's name or "--set".
using PresentKeys = std::map<std::string, std::string>;

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

// `key` is a key or a table name; the hint is the nearest of either.
Status UnknownKey(const std::string& key, const std::string& origin) {
  if (IsConfigTable(key)) {
    return InvalidArgumentError(origin + ": " + key + " is a table of keys ([" + key +
                                "]), not a value");
  }
  std::string best;
  size_t best_d = 4;
  for (const ConfigKey& known : ConfigSchema()) {
    for (std::string_view name = known.name; !name.empty(); name = ConfigTable(name)) {
      size_t d = Distance(key, std::string(name));
      if (d < best_d) best_d = d, best = std::string(name);
    }
  }
  std::string msg = origin + ": unknown key '" + key + "'";
  if (!best.empty()) msg += "; did you mean '" + best + "'?";
  return InvalidArgumentError(msg + " (`troupe config keys` lists them all)");
}

Result<ConfigValue> ToConfigValue(const toml::node& node, const ConfigKey& key) {
  const toml::array* list_node = node.as_array();
  if (list_node != nullptr && !list_node->empty() &&
      (key.type == ConfigType::kStringList || key.type == ConfigType::kFloatList)) {
    std::vector<std::string> strings;
    std::vector<double> numbers;
    for (size_t i = 0; i < list_node->size(); ++i) {
      const toml::node& entry = *list_node->get(i);
      if (auto v = entry.value_exact<std::string>(); v && key.type == ConfigType::kStringList) {
        strings.push_back(*v);
      } else if (auto d = entry.value<double>();
                 d && key.type == ConfigType::kFloatList &&
                 (entry.is_integer() || entry.is_floating_point())) {
        numbers.push_back(*d);
      } else {
        std::ostringstream os;
        os << key.name << ": expected " << TypeText(key) << ", but entry " << i << " is "
           << entry.type();
        return InvalidArgumentError(os.str());
      }
    }
    if (key.type == ConfigType::kStringList) return ConfigValue(std::move(strings));
    return ConfigValue(std::move(numbers));
  }
  if (const toml::array* array = node.as_array()) {
    std::vector<int64_t> list;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& entry = *array->get(i);
      if (auto v = entry.value_exact<int64_t>()) {
        list.push_back(*v);
        continue;
      }
      if (key.type != ConfigType::kIntList) break;  // the type error below
      std::ostringstream os;
      os << key.name << ": expected " << TypeText(key) << ", but entry " << i << " is "
         << entry.type();
      entry.visit([&os](const auto& n) { os << " " << n; });
      return InvalidArgumentError(os.str());
    }
    if (list.size() == array->size()) return ConfigValue(std::move(list));
  }
  if (auto v = node.value_exact<int64_t>()) return ConfigValue(*v);
  if (auto v = node.value_exact<double>()) return ConfigValue(*v);
  if (auto v = node.value_exact<bool>()) return ConfigValue(*v);
  if (auto v = node.value_exact<std::string>()) return ConfigValue(*v);
  std::ostringstream os;
  os << key.name << ": expected " << TypeText(key) << ", got " << node.type();
  return InvalidArgumentError(os.str());
}

// Sets `key` from `node` and records where it was set.
Status SetKey(const std::string& key, const toml::node& node, const std::string& origin,
              TrainConfig& config, PresentKeys& present) {
  const ConfigKey* k = FindConfigKey(key);
  if (k == nullptr) return UnknownKey(key, origin);
  Result<ConfigValue> value = ToConfigValue(node, *k);
  TROUPE_RETURN_IF_ERROR(value.status().WithContext(origin));
  TROUPE_RETURN_IF_ERROR(SetConfigValue(*k, *value, config).WithContext(origin));
  present[key] = origin;
  return Status::OK();
}

Status Apply(const toml::table& table, const std::string& prefix, const std::string& origin,
             TrainConfig& config, PresentKeys& present) {
  for (const auto& [k, node] : table) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) {
      // A table is accepted only when some key lives in it (or in a table below it).
      if (const ConfigKey* scalar = FindConfigKey(key)) {
        return InvalidArgumentError(origin + ": " + key + ": expected " + TypeText(*scalar) +
                                    ", got a table");
      }
      if (!IsConfigTable(key)) return UnknownKey(key, origin);
      TROUPE_RETURN_IF_ERROR(Apply(*sub, key, origin, config, present));
      continue;
    }
    TROUPE_RETURN_IF_ERROR(SetKey(key, node, origin, config, present));
  }
  return Status::OK();
}

std::string ParseErrorText(const toml::parse_error& e, const std::string& origin) {
  std::ostringstream os;
  os << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
     << e.description();
  return os.str();
}

// A key that only means something with another key's value (ConfigKey::only_with) is an
// error when present otherwise, even at its default: the user meant it to do something.
Status CheckApplicable(const PresentKeys& present, const TrainConfig& config) {
  for (const auto& [name, origin] : present) {
    const ConfigKey* key = FindConfigKey(name);
    if (!key->only_with) continue;
    const ConfigKey::Condition& want = *key->only_with;
    const ConfigValue have_value = FindConfigKey(want.key)->get(config);
    const std::string* have_string = std::get_if<std::string>(&have_value);
    const std::string have_word = have_string != nullptr ? *have_string : ValueText(have_value);
    if (std::find(want.values.begin(), want.values.end(), have_word) != want.values.end()) {
      continue;
    }
    const std::string have = ValueText(have_value);
    const std::string need = ConditionValuesText(want);
    return InvalidArgumentError(origin + ": " + name + " applies only with " + want.key + " = " +
                                need + ", and " + want.key + " is " + have + " (" + want.why +
                                "); remove " + name + " or set " + want.key + " = " + need);
  }
  return Status::OK();
}

// model.keras is the whole model: a model.name beside it would be silently unused. Given at the
// same level (both in the file, or both by --set) that is an error; a --set of one over the
// file's other replaces it (`--set model.keras=m.keras` on a config naming a zoo model), and
// the start-up line names the model that trains.
// The replaced key leaves `doc` too, so the config the run records names one model.
Status CheckModelSource(const PresentKeys& present, TrainConfig& config, toml::table& doc) {
  auto keras = present.find("model.keras");
  auto name = present.find("model.name");
  if (keras == present.end() || name == present.end()) return Status::OK();
  if (keras->second != name->second) {
    const bool keras_wins = keras->second == "--set";
    if (keras_wins) {
      config.model.clear();
    } else {
      config.model_keras.clear();
    }
    if (toml::table* model = doc["model"].as_table()) model->erase(keras_wins ? "name" : "keras");
    return Status::OK();
  }
  return InvalidArgumentError(
      "model.keras = \"" + config.model_keras + "\" (" + keras->second + ") and model.name = \"" +
      config.model + "\" (" + name->second +
      ") are both set; model.keras is the whole model and model.name would be ignored: remove "
      "model.name" +
      (name->second == "--set" ? std::string(" (its --set)") : " from " + name->second) +
      ", or model.keras");
}

// An error of a library's spec (the data source's, the optimizer's), whose message starts with
// a key relative to the spec's table ("num_classes: ..."), with the key placed in `table`.
Status InTable(const Status& status, const std::string& table) {
  if (status.ok()) return status;
  return Status(status.code(), table + "." + status.message());
}

// checkpoint.keep_best needs a test split, and top-5 accuracy at least 5 classes (when the
// config gives the class count, which only the sources that take it from the config can; the
// model's own count is checked when the job starts).
Status CheckKeepBest(const TrainConfig& config, const input::DataSource& source,
                     const std::string& origin) {
  if (config.keep_best == train::TestMetric::kNone) return Status::OK();
  const std::string key =
      "checkpoint.keep_best = \"" + std::string(train::TestMetricName(config.keep_best)) + "\"";
  if (source.test_split) {
    if (Status split = input::PlaceDataKeys(source.test_split(config.data), "data"); !split.ok()) {
      return InvalidArgumentError(origin + ": " + key + " needs a test split: " + split.message() +
                                  "; set it or drop keep_best");
    }
  }
  if (config.keep_best == train::TestMetric::kTop5Accuracy && config.data.num_classes > 0 &&
      config.data.num_classes < 5) {
    return InvalidArgumentError(origin + ": " + key +
                                " needs at least 5 classes, data.num_classes is " +
                                std::to_string(config.data.num_classes) +
                                "; keep the best by test_accuracy or test_loss instead");
  }
  return Status::OK();
}

// A Keras model saved under a mixed dtype policy trains under it, as Keras' fit would; a
// train.precision given explicitly must agree with it.
Status AdoptModelPrecision(const PresentKeys& present, TrainConfig& config) {
  if (config.model_keras.empty()) return Status::OK();
  Result<std::string> read = keras::KerasModelFileDTypePolicy(config.model_keras);
  // A missing file is the model loader's error to report (it names the file, before anything
  // is written); parsing a config does not require its files.
  if (read.status().code() == StatusCode::kNotFound) return Status::OK();
  TROUPE_ASSIGN_OR_RETURN(std::string policy, std::move(read));
  TROUPE_ASSIGN_OR_RETURN(DType compute, ParsePrecisionPolicy(policy));
  if (compute == DType::kFloat32 || compute == config.precision) return Status::OK();
  auto given = present.find("train.precision");
  if (given == present.end()) {
    config.precision = compute;
    return Status::OK();
  }
  return InvalidArgumentError(given->second + ": train.precision = \"" +
                              std::string(PrecisionPolicyName(config.precision)) +
                              "\", but model.keras " + config.model_keras +
                              " was saved under "
                              "Keras' " +
                              policy + " dtype policy; set train.precision = \"" + policy +
                              "\" (or leave it out), or save the model under float32");
}

Status CheckCombinations(const TrainConfig& config, const std::string& origin) {
  // The optimizer recipe as Keras would check it (schedule boundaries/values, one clipping
  // mode, ...), before anything is written.
  TROUPE_RETURN_IF_ERROR(
      InTable(nn::ValidateOptimizerConfig(config.optimizer), "optimizer").WithContext(origin));
  if (config.precision != DType::kFloat32 && config.device == Device::Type::kGpu) {
    return UnimplementedError(origin + ": train.precision = \"" +
                              std::string(PrecisionPolicyName(config.precision)) +
                              "\" runs on CPUs only so far (emulated rounding); use "
                              "train.device = \"cpu\" or train.precision = \"float32\"");
  }
  const bool nccl = config.collectives_backend == train::CollectivesBackend::kNccl;
  if (nccl && config.device != Device::Type::kGpu) {
    return InvalidArgumentError(origin +
                                ": collectives.backend = \"nccl\" needs train.device = \"gpu\"");
  }
  if (nccl && config.replicas_per_process > 1) {
    return InvalidArgumentError(
        origin +
        ": collectives.backend = \"nccl\" runs one replica per process (NCCL refuses "
        "two ranks on one GPU); set train.replicas_per_process = 1 and start one "
        "process per GPU");
  }
  TROUPE_ASSIGN_OR_RETURN(input::DataSource source, input::FindDataSource(config.data.source));
  if (source.check) {
    TROUPE_RETURN_IF_ERROR(
        input::PlaceDataKeys(source.check(config.data), "data").WithContext(origin));
  }
  TROUPE_RETURN_IF_ERROR(CheckKeepBest(config, source, origin));
  if (!config.advertise_address.empty() && !config.advertise_interface.empty()) {
    return InvalidArgumentError(origin +
                                ": control.advertise_address and control.advertise_interface "
                                "are both set; set one (the address, or the interface whose "
                                "IPv4 to advertise)");
  }
  if (config.replicas_per_process > 0 &&
      config.global_batch_size % config.replicas_per_process != 0) {
    return InvalidArgumentError(origin + ": train.global_batch_size (" +
                                std::to_string(config.global_batch_size) +
                                ") is not divisible by train.replicas_per_process (" +
                                std::to_string(config.replicas_per_process) +
                                "); choose a batch that is a multiple of the replica count");
  }
  return Status::OK();
}

// Puts an override into the parsed document, so that the recorded text is what ran:
// data.features.image.shape goes to `shape` in table data, its table features, its table image.
void Merge(toml::table& doc, const std::string& key, const ConfigValue& value) {
  toml::table* t = &doc;
  size_t begin = 0;
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', begin)) {
    const std::string part = key.substr(begin, dot - begin);
    if (!(*t)[part].is_table()) t->insert_or_assign(part, toml::table{});
    t = (*t)[part].as_table();
    begin = dot + 1;
  }
  const std::string leaf = key.substr(begin);
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::vector<int64_t>> ||
                      std::is_same_v<V, std::vector<std::string>> ||
                      std::is_same_v<V, std::vector<double>>) {
          toml::array array;
          for (const auto& e : v) array.push_back(e);
          t->insert_or_assign(leaf, std::move(array));
        } else {
          t->insert_or_assign(leaf, v);
        }
      },
      value);
}

// The override's value, typed as TOML reads it; a bare word is a string.
Result<ConfigValue> OverrideValue(const std::string& o, const std::string& key,
                                  const std::string& value) {
  toml::parse_result v = toml::parse("v = " + value, "--set " + key);
  if (!v) v = toml::parse("v = \"" + value + "\"", "--set " + key);
  if (!v) return InvalidArgumentError("--set '" + o + "': cannot parse the value");
  const ConfigKey* k = FindConfigKey(key);
  if (k == nullptr) return UnknownKey(key, "--set");
  return ToConfigValue(*v.table().get("v"), *k);
}

// Why job.run_dir cannot be written, when creating a file in `dir` (the run dir itself, or its
// nearest existing ancestor) failed with `error`: a run dir that exists is "not writable"; one
// that does not is "cannot be created in" that ancestor. A kernel filesystem (/proc, /sys)
// refuses new files with odd errors (ENOENT in /proc), so it is named as such.
Status RunDirNotWritable(const std::string& run_dir, const std::filesystem::path& dir, int error) {
  std::string why = std::strerror(error);
  struct statfs fs = {};
  if (::statfs(dir.c_str(), &fs) == 0) {
    if (fs.f_type == PROC_SUPER_MAGIC) why = "it is the kernel's /proc filesystem";
    if (fs.f_type == SYSFS_MAGIC) why = "it is the kernel's sysfs filesystem";
  }
  const bool exists = std::filesystem::absolute(run_dir) == dir;
  const std::string what =
      exists ? "'" + run_dir + "' is not writable"
             : "'" + run_dir + "' cannot be created: no files can be made in " + dir.string();
  return PermissionDeniedError("job.run_dir: " + what + " (" + why +
                               "); choose a writable directory");
}

}  // namespace

Result<TrainConfig> ParseTrainConfig(const std::string& text, const std::string& origin,
                                     const std::vector<std::string>& overrides) {
  TrainConfig config = ConfigDefaults();
  PresentKeys present;
  toml::parse_result parsed = toml::parse(text, origin);
  if (!parsed) return InvalidArgumentError(ParseErrorText(parsed.error(), origin));
  toml::table& doc = parsed.table();
  TROUPE_RETURN_IF_ERROR(Apply(doc, "", origin, config, present));
  std::string applied;
  for (const std::string& o : overrides) {
    size_t eq = o.find('=');
    size_t dot = o.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      return InvalidArgumentError("--set '" + o + "': expected section.key=value");
    }
    const std::string key = o.substr(0, eq);
    TROUPE_ASSIGN_OR_RETURN(ConfigValue value, OverrideValue(o, key, o.substr(eq + 1)));
    TROUPE_RETURN_IF_ERROR(SetConfigValue(*FindConfigKey(key), value, config).WithContext("--set"));
    present[key] = "--set";
    Merge(doc, key, value);
    applied += "#   --set " + o + "\n";
  }
  TROUPE_RETURN_IF_ERROR(CheckApplicable(present, config));
  TROUPE_RETURN_IF_ERROR(CheckModelSource(present, config, doc));
  TROUPE_RETURN_IF_ERROR(AdoptModelPrecision(present, config));
  TROUPE_RETURN_IF_ERROR(CheckCombinations(config, origin));
  if (overrides.empty()) {
    config.source_text = text;
  } else {
    std::ostringstream os;
    os << "# " << origin << " (its comments are not kept) with these overrides applied:\n"
       << applied << doc << "\n";
    config.source_text = os.str();
  }
  return config;
}

Result<TrainConfig> LoadTrainConfig(const std::string& path,
                                    const std::vector<std::string>& overrides) {
  Result<std::string> text = Env::Default()->ReadFileToString(path);
  if (!text.ok()) {
    return NotFoundError("config file '" + path + "' cannot be read (" + text.status().message() +
                         ")");
  }
  return ParseTrainConfig(*text, path, overrides);
}

Status ValidateTrainEnvironment(const TrainConfig& config, int64_t total_replicas) {
  namespace fs = std::filesystem;
  if (total_replicas < 1 || config.global_batch_size % total_replicas != 0) {
    return InvalidArgumentError(
        "train.global_batch_size (" + std::to_string(config.global_batch_size) +
        ") is not divisible by the job's " + std::to_string(total_replicas) +
        " replicas; choose a multiple of the replica count");
  }
  TROUPE_ASSIGN_OR_RETURN(input::DataSource source, input::FindDataSource(config.data.source));
  if (source.check_files)
    TROUPE_RETURN_IF_ERROR(input::PlaceDataKeys(source.check_files(config.data), "data"));
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
  if (fd < 0) return RunDirNotWritable(config.run_dir, dir, errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::OK();
}

Status WriteConfigRecord(const TrainConfig& config) {
  Env* env = Env::Default();
  if (Status s = env->CreateDirectories(config.run_dir); !s.ok()) {
    return PermissionDeniedError("job.run_dir: cannot create '" + config.run_dir +
                                 "': " + s.message() + "; choose a writable directory");
  }
  const std::string path = JoinPath(config.run_dir, "config.toml");
  const auto WithHint = [](Status s) {
    return s.ok() ? s : Status(s.code(), s.message() + "; check that job.run_dir is writable");
  };
  // A start the trainer then refuses (a changed model or batch cannot resume) must not lose
  // the record of the config the checkpoints were written with.
  if (env->FileExists(path)) {
    Result<std::string> previous = env->ReadFileToString(path);
    if (!previous.ok()) return WithHint(previous.status());
    if (*previous != config.source_text) {
      TROUPE_RETURN_IF_ERROR(WithHint(env->WriteFileAtomically(path + ".previous", *previous)));
    }
  }
  return WithHint(env->WriteFileAtomically(path, config.source_text));
}

}  // namespace troupe::launch
