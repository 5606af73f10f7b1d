#include "launch/config_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "launch/config_keys.h"

namespace troupe::launch {
namespace {

const char* TypeName(const ConfigValue& v) {
  static const char* names[] = {"boolean", "integer", "floating-point", "string",
                                "array",   "array",   "array"};
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
  return InvalidArgumentError(key.name + ": '" + v + "' is not one of " +
                              Join(choices, ", ", false));
}

}  // namespace

std::vector<std::string> ConfigChoices(const ConfigKey& key) {
  return key.choices_from ? key.choices_from() : key.choices;
}

// Built again when a program registers another data source or optimizer (whose keys join it);
// earlier schemas stay alive, as callers may hold their keys.
const std::vector<ConfigKey>& ConfigSchema() {
  static std::mutex mu;
  static const std::vector<ConfigKey>* schema = nullptr;
  static size_t built_for = 0;
  const size_t components = RegisteredComponents();
  std::lock_guard<std::mutex> lock(mu);
  if (schema == nullptr || built_for != components) {
    schema = new std::vector<ConfigKey>(BuildConfigSchema());
    built_for = components;
  }
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
  bool right_type = false;
  switch (key.type) {
    case ConfigType::kInt:
      if (!std::holds_alternative<int64_t>(v)) break;
      right_type = true;
      TROUPE_RETURN_IF_ERROR(CheckRange(key, static_cast<double>(std::get<int64_t>(v))));
      break;
    case ConfigType::kFloat:
      if (const int64_t* i = std::get_if<int64_t>(&v)) v = static_cast<double>(*i);
      if (!std::holds_alternative<double>(v)) break;
      right_type = true;
      TROUPE_RETURN_IF_ERROR(CheckRange(key, std::get<double>(v)));
      break;
    case ConfigType::kBool:
      right_type = std::holds_alternative<bool>(v);
      break;
    case ConfigType::kString:
      if (!std::holds_alternative<std::string>(v)) break;
      right_type = true;
      TROUPE_RETURN_IF_ERROR(CheckChoice(key, std::get<std::string>(v)));
      break;
    case ConfigType::kIntList:
      if (!std::holds_alternative<std::vector<int64_t>>(v)) break;
      right_type = true;
      for (int64_t e : std::get<std::vector<int64_t>>(v)) {
        if (static_cast<double>(e) < key.min || static_cast<double>(e) >= key.max) {
          return InvalidArgumentError(key.name + ": every entry must be >= " + Number(key.min) +
                                      ", got " + ValueText(v));
        }
      }
      break;
    case ConfigType::kStringList:
      if (const auto* ints = std::get_if<std::vector<int64_t>>(&v); ints && ints->empty()) {
        v = std::vector<std::string>{};  // [] reads as an integer list
      }
      right_type = std::holds_alternative<std::vector<std::string>>(v);
      break;
    case ConfigType::kFloatList:
      if (const auto* ints = std::get_if<std::vector<int64_t>>(&v)) {
        v = std::vector<double>(ints->begin(), ints->end());
      }
      if (!std::holds_alternative<std::vector<double>>(v)) break;
      right_type = true;
      for (double e : std::get<std::vector<double>>(v)) {
        if (!(e >= key.min && e < key.max)) {
          return InvalidArgumentError(key.name + ": every entry must be >= " + Number(key.min) +
                                      ", got " + ValueText(v));
        }
      }
      break;
  }
  if (!right_type) {
    static const char* want[] = {"an integer",
                                 "a number",
                                 "true or false",
                                 "a string",
                                 "a list of integers ([a, b, ...])",
                                 "a list of strings ([\"a\", \"b\", ...])",
                                 "a list of numbers ([a, b, ...])"};
    return InvalidArgumentError(key.name + ": expected " + want[static_cast<int>(key.type)] +
                                ", got " + TypeName(value));
  }
  if (key.extra_check) {
    const std::string problem = key.extra_check(v);
    if (!problem.empty()) return InvalidArgumentError(key.name + ": " + problem);
  }
  key.store(v, config);
  return Status::OK();
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
    case ConfigType::kIntList:
      return std::isinf(key.min) ? "list of integers" : "list of integers >= " + Number(key.min);
    case ConfigType::kStringList:
      return "list of strings";
    case ConfigType::kFloatList:
      return std::isinf(key.min) ? "list of numbers" : "list of numbers >= " + Number(key.min);
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
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) {
    std::string s = "[";
    for (size_t i = 0; i < list->size(); ++i) s += (i ? ", " : "") + std::to_string((*list)[i]);
    return s + "]";
  }
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    std::string s = "[";
    for (size_t i = 0; i < list->size(); ++i) s += (i ? ", " : "") + Quoted((*list)[i]);
    return s + "]";
  }
  if (const auto* list = std::get_if<std::vector<double>>(&value)) {
    std::string s = "[";
    for (size_t i = 0; i < list->size(); ++i) {
      s += (i ? ", " : "") + ValueText(ConfigValue((*list)[i]));
    }
    return s + "]";
  }
  return Quoted(std::get<std::string>(value));
}

std::string ConditionValuesText(const ConfigKey::Condition& condition) {
  const ConfigKey* key = FindConfigKey(condition.key);
  const bool boolean = key != nullptr && key->type == ConfigType::kBool;
  std::string out;
  const size_t n = condition.values.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += boolean ? condition.values[i] : Quoted(condition.values[i]);
  }
  return out;
}

std::string_view ConfigTable(std::string_view key_name) {
  const size_t dot = key_name.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : key_name.substr(0, dot);
}

bool IsConfigTable(std::string_view table) {
  for (const ConfigKey& k : ConfigSchema()) {
    const std::string_view name = k.name;
    if (name.size() > table.size() && name.substr(0, table.size()) == table &&
        name[table.size()] == '.') {
      return true;
    }
  }
  return false;
}

TrainConfig ConfigDefaults() {
  TrainConfig config;
  config.replicas_per_process = 0;  // left out: "auto" (train::ReplicasPerProcess)
  return config;
}

std::string FormatConfigKeys() {
  const TrainConfig defaults = ConfigDefaults();
  std::ostringstream os;
  os << "Keys of a `troupe train` config: data.features.image.key is `key = value` in the\n"
        "TOML file's [data.features.image] table, or `--set data.features.image.key=value`.\n"
        "Each line shows the default, then the type.\n";
  std::string_view table;
  for (const ConfigKey& k : ConfigSchema()) {
    if (ConfigTable(k.name) != table) os << "\n";
    table = ConfigTable(k.name);
    const bool unset = k.is_set && !k.is_set(defaults);
    std::string head = k.name + (unset ? " (unset)" : " = " + ValueText(k.get(defaults)));
    os << head << std::string(head.size() < 44 ? 44 - head.size() : 2, ' ') << TypeText(k);
    os << "\n    " << k.meaning;
    if (k.only_with) {
      os << " Only with " << k.only_with->key << " = " << ConditionValuesText(*k.only_with) << ".";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace troupe::launch
