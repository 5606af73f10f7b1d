// The schema of `troupe train`'s TOML config: every accepted key with its type, range,
// default, one line of meaning, and the TrainConfig field it sets. It is the one source of
// truth: the parser (train_config.h), `troupe config keys` and the schema tests all read it, so
// a key cannot be accepted without being documented or documented without being parsed.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "actors/train_config.h"
#include "core/result.h"

namespace troupe::launch {

using actors::TrainConfig;

// kIntList: a TOML array of integers (a shape, a size); [] is a valid value. kStringList and
// kFloatList likewise (a kFloatList accepts integers).
enum class ConfigType { kInt, kFloat, kBool, kString, kIntList, kStringList, kFloatList };

// One value as TOML gives it (integers stay integers; kFloat keys accept both).
using ConfigValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>,
                                 std::vector<std::string>, std::vector<double>>;

struct ConfigKey {
  // "table.key": the TOML table is the name up to its last dot ("data.features.image.key" is
  // `key` in [data.features.image]).
  std::string name;
  ConfigType type = ConfigType::kString;
  std::string meaning;  // one line, for `troupe config keys`
  // Numbers, and each entry of a kIntList, must lie in [min, max), or (min, max) when
  // min_exclusive.
  double min = -std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  // Strings: the accepted values (empty: any).
  std::vector<std::string> choices;
  // When set, the accepted values as they are when the key is checked (a registry that the
  // program may extend, like model.name's); replaces `choices`.
  std::function<std::vector<std::string>()> choices_from;
  // When set, a check beyond type, range and choices, run on a value of the right type: ""
  // when the value is fine, else what is wrong with it ("must be empty or [height, width], got
  // [1, 2, 3]"); SetConfigValue prefixes the key's name.
  std::function<std::string(const ConfigValue&)> extra_check;
  // A key that only means something while another (string) key has one of some values
  // (optimizer.momentum with optimizer.name = "sgd"; data.files with data.source = "text" or
  // "tfrecord"); setting it otherwise is an error ending in `why`.
  struct Condition {
    std::string key;
    std::vector<std::string> values;
    std::string why;
  };
  std::optional<Condition> only_with;
  // Write and read the key's TrainConfig field; `store` checks nothing (SetConfigValue does).
  std::function<void(const ConfigValue&, TrainConfig&)> store;
  std::function<ConfigValue(const TrainConfig&)> get;
  // Keys whose field is optional (optimizer.weight_decay): whether it holds a value; `get` of
  // an unset one gives NaN. Empty for keys that always have a value.
  std::function<bool(const TrainConfig&)> is_set;
};

// Every key, in the order `troupe config keys` lists them (by section).
const std::vector<ConfigKey>& ConfigSchema();
// nullptr for an unknown key.
const ConfigKey* FindConfigKey(std::string_view name);

// Checks `value`'s type, range and choices against `key` (InvalidArgument naming the key and
// what it accepts), then stores it in `config`.
Status SetConfigValue(const ConfigKey& key, const ConfigValue& value, TrainConfig& config);

// A string key's accepted values now (empty: any).
std::vector<std::string> ConfigChoices(const ConfigKey& key);
// "integer >= 1", "number in [0, 1)", "\"adam\" | \"sgd\"", "true | false", "string",
// "list of integers >= 1".
std::string TypeText(const ConfigKey& key);
// The value as TOML writes it: 3, 0.001, 1e-07, true, "adam", [28, 28, 1].
std::string ValueText(const ConfigValue& value);
// `condition`'s values as TOML, for messages: "\"sgd\"", "\"text\" or \"tfrecord\"".
std::string ConditionValuesText(const ConfigKey::Condition& condition);
// The TOML table a key lives in: "data.features.image" for "data.features.image.key".
std::string_view ConfigTable(std::string_view key_name);
// Whether some key lives in `table` or in a table below it ("data", "data.features").
bool IsConfigTable(std::string_view table);
// The config a TOML file that sets no key stands for: TrainConfig's defaults except
// train.replicas_per_process = 0 ("auto"; a TrainConfig built in code keeps 1). The parser
// starts from it and `troupe config keys` lists its values as the defaults.
TrainConfig ConfigDefaults();
// The listing `troupe config keys` prints: one line per key with type, default (ConfigDefaults)
// and meaning.
std::string FormatConfigKeys();

}  // namespace troupe::launch
