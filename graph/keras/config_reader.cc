#include "graph/keras/config_reader.h"

#include <functional>
#include <map>

#include "graph/keras/json_util.h"

namespace troupe::keras::internal {
namespace {

using json = nlohmann::json;

std::string Show(const json& j) { return j.dump(); }

// Keras initializer names (snake_case aliases) -> class names.
const std::map<std::string, std::string>& InitializerAliases() {
  static const auto* m = new std::map<std::string, std::string>{
      {"zeros", "Zeros"},
      {"ones", "Ones"},
      {"constant", "Constant"},
      {"glorot_uniform", "GlorotUniform"},
      {"glorot_normal", "GlorotNormal"},
      {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"},
      {"lecun_uniform", "LecunUniform"},
      {"lecun_normal", "LecunNormal"},
      {"uniform", "RandomUniform"},
      {"random_uniform", "RandomUniform"},
      {"normal", "RandomNormal"},
      {"random_normal", "RandomNormal"},
      {"truncated_normal", "TruncatedNormal"},
      {"variance_scaling", "VarianceScaling"},
      {"orthogonal", "Orthogonal"},
      {"OrthogonalInitializer", "Orthogonal"},
  };
  return *m;
}

const char* kInitializerClasses =
    "Zeros, Ones, Constant, GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform, "
    "LecunNormal, RandomUniform, RandomNormal, TruncatedNormal, VarianceScaling, Orthogonal";

}  // namespace

Result<ConfigReader> ConfigReader::Open(const json& envelope) {
  if (!envelope.is_object() || !envelope.contains("class_name") ||
      !envelope["class_name"].is_string()) {
    return InvalidArgumentError(
        "a Keras layer envelope must be an object with a string "
        "\"class_name\", got " +
        Show(envelope).substr(0, 200));
  }
  ConfigReader r;
  r.class_name_ = envelope["class_name"].get<std::string>();
  if (envelope.contains("module") && envelope["module"].is_string()) {
    r.module_ = envelope["module"].get<std::string>();
  }
  if (envelope.contains("config")) r.config_ = envelope["config"];
  if (!r.config_.is_object()) {
    return InvalidArgumentError("Keras layer " + r.class_name_ +
                                ": \"config\" must be an object, got " + Show(r.config_));
  }
  if (const json* name = r.Get("name"); name != nullptr && name->is_string()) {
    r.name_ = name->get<std::string>();
  } else if (envelope.contains("name") && envelope["name"].is_string()) {
    r.name_ = envelope["name"].get<std::string>();
  }
  TROUPE_ASSIGN_OR_RETURN(r.trainable_, r.Bool("trainable", true));
  // The layer's own dtype policy; a mixed one takes part in the model's policy
  // (KerasModelDTypePolicy), "float32" in a mixed model keeps the layer in float32.
  TROUPE_ASSIGN_OR_RETURN(r.dtype_policy_, DTypePolicyName(r.Get("dtype"), r.What()));
  if (!r.dtype_policy_.empty() && r.dtype_policy_ != "float32" &&
      r.dtype_policy_ != "mixed_float16" && r.dtype_policy_ != "mixed_bfloat16") {
    return r.Unsupported("dtype", "'" + r.dtype_policy_ + "'",
                         "float32, mixed_float16 or mixed_bfloat16");
  }
  return r;
}

std::string ConfigReader::What() const { return "Keras layer " + class_name_ + " '" + name_ + "'"; }

Status ConfigReader::Unsupported(const std::string& option, const std::string& got,
                                 const std::string& supported) const {
  return UnimplementedError(What() + ": option '" + option + "' = " + got +
                            " is not supported; supported: " + supported);
}

Status ConfigReader::Invalid(const std::string& option, const std::string& why) const {
  return InvalidArgumentError(What() + ": option '" + option + "' " + why);
}

const json* ConfigReader::Get(const std::string& key) {
  read_.insert(key);
  auto it = config_.find(key);
  return it == config_.end() ? nullptr : &*it;
}

Status ConfigReader::BadType(const std::string& key, const std::string& want) const {
  return Invalid(key, "must be " + want + ", got " + Show(config_.at(key)));
}

Result<int64_t> ConfigReader::Int(const std::string& key, std::optional<int64_t> fallback) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) {
    if (fallback) return *fallback;
    return Invalid(key, "is required");
  }
  if (!j->is_number_integer()) return BadType(key, "an integer");
  return j->get<int64_t>();
}

Result<std::optional<int64_t>> ConfigReader::OptionalInt(const std::string& key) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) return std::optional<int64_t>();
  if (!j->is_number_integer()) return BadType(key, "an integer or null");
  return std::optional<int64_t>(j->get<int64_t>());
}

Result<double> ConfigReader::Double(const std::string& key, std::optional<double> fallback) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) {
    if (fallback) return *fallback;
    return Invalid(key, "is required");
  }
  if (!j->is_number()) return BadType(key, "a number");
  return j->get<double>();
}

Result<std::optional<double>> ConfigReader::OptionalDouble(const std::string& key) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) return std::optional<double>();
  if (!j->is_number()) return BadType(key, "a number or null");
  return std::optional<double>(j->get<double>());
}

Result<bool> ConfigReader::Bool(const std::string& key, std::optional<bool> fallback) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) {
    if (fallback) return *fallback;
    return Invalid(key, "is required");
  }
  if (!j->is_boolean()) return BadType(key, "true or false");
  return j->get<bool>();
}

Result<std::string> ConfigReader::String(const std::string& key,
                                         std::optional<std::string> fallback) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) {
    if (fallback) return *fallback;
    return Invalid(key, "is required");
  }
  if (!j->is_string()) return BadType(key, "a string");
  return j->get<std::string>();
}

Result<std::vector<int64_t>> ConfigReader::Ints(const std::string& key, size_t count,
                                                std::optional<std::vector<int64_t>> fallback) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) {
    if (fallback) return *fallback;
    return Invalid(key, "is required");
  }
  if (j->is_number_integer()) {
    return std::vector<int64_t>(count == 0 ? 1 : count, j->get<int64_t>());
  }
  if (!j->is_array()) return BadType(key, "an integer or a list of integers");
  // Nested lists (ZeroPadding2D's ((t, b), (l, r))) are flattened in order.
  std::vector<int64_t> out;
  std::function<bool(const json&)> flatten = [&](const json& e) {
    if (e.is_number_integer()) {
      out.push_back(e.get<int64_t>());
      return true;
    }
    if (!e.is_array()) return false;
    for (const json& x : e) {
      if (!flatten(x)) return false;
    }
    return true;
  };
  if (!flatten(*j)) return BadType(key, "a list of integers");
  if (count != 0 && out.size() != count) {
    return BadType(key, "a list of " + std::to_string(count) + " integers");
  }
  return out;
}

json ConfigReader::Raw(const std::string& key) {
  const json* j = Get(key);
  return j == nullptr ? json() : *j;
}

Status ConfigReader::RequireNull(const std::string& key) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) return Status::OK();
  return Unsupported(key, Show(*j), "null");
}

Status ConfigReader::RequireEqual(const std::string& key, const json& value) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null() || *j == value) return Status::OK();
  return Unsupported(key, Show(*j), Show(value));
}

Status ConfigReader::RequireChannelsLast() { return RequireEqual("data_format", "channels_last"); }

Result<std::string> ConfigReader::Padding(const std::string& key) {
  TROUPE_ASSIGN_OR_RETURN(std::string p, String(key, "valid"));
  if (p == "valid") return std::string("VALID");
  if (p == "same") return std::string("SAME");
  return Unsupported(key, "\"" + p + "\"", "\"valid\", \"same\"");
}

Result<nn::ActivationFn> ConfigReader::Act(const std::string& key) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) return nn::ActivationByName("linear");
  if (!j->is_string()) {
    std::string list;
    for (const std::string& n : nn::ActivationNames()) list += (list.empty() ? "" : ", ") + n;
    return Unsupported(key, Show(*j), "the built-in activation names " + list);
  }
  Result<nn::ActivationFn> fn = nn::ActivationByName(j->get<std::string>());
  if (!fn.ok()) return Status(fn.status().code(), What() + ": " + fn.status().message());
  return fn;
}

Result<nn::Initializer> ConfigReader::Init(const std::string& key, const std::string& fallback,
                                           int64_t default_seed) {
  const json* j = Get(key);
  if (j == nullptr || j->is_null()) return ParseInitializer(key, json(fallback), default_seed);
  return ParseInitializer(key, *j, default_seed);
}

Result<nn::Initializer> ConfigReader::ParseInitializer(const std::string& key, const json& j,
                                                       int64_t default_seed) {
  std::string cls;
  json cfg = json::object();
  if (j.is_string()) {
    auto it = InitializerAliases().find(j.get<std::string>());
    cls = it == InitializerAliases().end() ? j.get<std::string>() : it->second;
  } else if (j.is_object() && j.contains("class_name") && j["class_name"].is_string()) {
    cls = j["class_name"].get<std::string>();
    if (j.contains("config") && j["config"].is_object()) cfg = j["config"];
  } else {
    return Unsupported(key, Show(j),
                       std::string("an initializer envelope or name: ") + kInitializerClasses);
  }
  std::set<std::string> used;
  auto num = [&](const std::string& k, double def) -> Result<double> {
    used.insert(k);
    if (!cfg.contains(k) || cfg[k].is_null()) return def;
    if (!cfg[k].is_number())
      return Invalid(key, "." + k + " must be a number, got " + Show(cfg[k]));
    return cfg[k].get<double>();
  };
  auto seed = [&]() -> Result<int64_t> {
    used.insert("seed");
    if (!cfg.contains("seed") || cfg["seed"].is_null()) return default_seed;
    if (!cfg["seed"].is_number_integer()) {
      return Invalid(key, ".seed must be an integer or null, got " + Show(cfg["seed"]));
    }
    return cfg["seed"].get<int64_t>();
  };
  // Keras 3.15 VarianceScaling also writes input_axes/output_axes (fan axes): default only.
  for (const char* k : {"input_axes", "output_axes"}) {
    used.insert(k);
    if (cfg.contains(k) && !cfg[k].is_null())
      return Unsupported(key + "." + k, Show(cfg[k]), "null");
  }
  nn::Initializer init;
  if (cls == "Zeros") {
    init = nn::Zeros();
  } else if (cls == "Ones") {
    init = nn::Ones();
  } else if (cls == "Constant") {
    TROUPE_ASSIGN_OR_RETURN(double v, num("value", 0.0));
    init = nn::Constant(v);
  } else if (cls == "GlorotUniform" || cls == "GlorotNormal" || cls == "HeUniform" ||
             cls == "HeNormal" || cls == "LecunUniform" || cls == "LecunNormal") {
    TROUPE_ASSIGN_OR_RETURN(int64_t s, seed());
    init = cls == "GlorotUniform"  ? nn::GlorotUniform(s)
           : cls == "GlorotNormal" ? nn::GlorotNormal(s)
           : cls == "HeUniform"    ? nn::HeUniform(s)
           : cls == "HeNormal"     ? nn::HeNormal(s)
           : cls == "LecunUniform" ? nn::LecunUniform(s)
                                   : nn::LecunNormal(s);
  } else if (cls == "VarianceScaling") {
    TROUPE_ASSIGN_OR_RETURN(double scale, num("scale", 1.0));
    TROUPE_ASSIGN_OR_RETURN(int64_t s, seed());
    used.insert("mode");
    used.insert("distribution");
    std::string mode = cfg.value("mode", std::string("fan_in"));
    std::string dist = cfg.value("distribution", std::string("truncated_normal"));
    nn::FanMode m = mode == "fan_in"    ? nn::FanMode::kFanIn
                    : mode == "fan_out" ? nn::FanMode::kFanOut
                                        : nn::FanMode::kFanAvg;
    if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg") {
      return Unsupported(key + ".mode", "\"" + mode + "\"", "fan_in, fan_out, fan_avg");
    }
    nn::Distribution d;
    if (dist == "uniform") {
      d = nn::Distribution::kUniform;
    } else if (dist == "truncated_normal" || dist == "normal") {
      d = nn::Distribution::kTruncatedNormal;
    } else if (dist == "untruncated_normal") {
      d = nn::Distribution::kUntruncatedNormal;
    } else {
      return Unsupported(key + ".distribution", "\"" + dist + "\"",
                         "uniform, truncated_normal, normal, untruncated_normal");
    }
    init = nn::VarianceScaling(scale, m, d, s);
  } else if (cls == "RandomUniform") {
    TROUPE_ASSIGN_OR_RETURN(double lo, num("minval", -0.05));
    TROUPE_ASSIGN_OR_RETURN(double hi, num("maxval", 0.05));
    TROUPE_ASSIGN_OR_RETURN(int64_t s, seed());
    init = nn::RandomUniform(lo, hi, s);
  } else if (cls == "RandomNormal" || cls == "TruncatedNormal") {
    TROUPE_ASSIGN_OR_RETURN(double mean, num("mean", 0.0));
    TROUPE_ASSIGN_OR_RETURN(double stddev, num("stddev", 0.05));
    TROUPE_ASSIGN_OR_RETURN(int64_t s, seed());
    init = cls == "RandomNormal" ? nn::RandomNormal(mean, stddev, s)
                                 : nn::TruncatedNormal(mean, stddev, s);
  } else if (cls == "Orthogonal" || cls == "OrthogonalInitializer") {
    TROUPE_ASSIGN_OR_RETURN(double gain, num("gain", 1.0));
    TROUPE_ASSIGN_OR_RETURN(int64_t s, seed());
    init = nn::Orthogonal(gain, s);
  } else {
    return Unsupported(key, Show(j), kInitializerClasses);
  }
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    if (used.count(it.key()) == 0) {
      return Unsupported(key + "." + it.key(), Show(it.value()), "the " + cls + " defaults");
    }
  }
  return init;
}

Result<Regularizer> ConfigReader::Reg(const std::string& key) {
  const json* j = Get(key);
  Regularizer r;
  if (j == nullptr || j->is_null()) return r;
  std::string cls;
  json cfg = json::object();
  if (j->is_string()) {
    cls = j->get<std::string>();
  } else if (j->is_object() && j->contains("class_name") && (*j)["class_name"].is_string()) {
    cls = (*j)["class_name"].get<std::string>();
    if (j->contains("config") && (*j)["config"].is_object()) cfg = (*j)["config"];
  }
  // Keras' defaults when the config omits a factor: 0.01.
  auto factor = [&](const char* k) -> Result<double> {
    if (!cfg.contains(k) || cfg[k].is_null()) return 0.01;
    if (!cfg[k].is_number()) return Invalid(key, std::string(".") + k + " must be a number");
    return cfg[k].get<double>();
  };
  if (cls == "L1" || cls == "l1") {
    TROUPE_ASSIGN_OR_RETURN(r.l1, factor("l1"));
  } else if (cls == "L2" || cls == "l2") {
    TROUPE_ASSIGN_OR_RETURN(r.l2, factor("l2"));
  } else if (cls == "L1L2" || cls == "l1_l2") {
    // keras.regularizers.L1L2(l1=0.0, l2=0.0).
    r.l1 = cfg.value("l1", 0.0);
    r.l2 = cfg.value("l2", 0.0);
  } else {
    return Unsupported(key, Show(*j), "null, L1, L2, L1L2");
  }
  return r;
}

Status ConfigReader::Finish() const {
  for (auto it = config_.begin(); it != config_.end(); ++it) {
    if (read_.count(it.key()) == 0) {
      std::string known;
      for (const std::string& k : read_) known += (known.empty() ? "" : ", ") + k;
      return Unsupported(it.key(), Show(it.value()),
                         "a config with only the keys this class understands: " + known);
    }
  }
  return Status::OK();
}

}  // namespace troupe::keras::internal
