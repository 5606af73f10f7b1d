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

#include "core/config_key.h"
#include "core/result.h"
#include "train/train_config.h"

namespace troupe::launch {

using train::TrainConfig;

using config::ConfigType;
using config::ConfigValue;

// A key of the config, named by its whole path ("table.key": the TOML table is the name up to
// its last dot, so "data.features.image.key" is `key` in [data.features.image]). Its type,
// range, choices, checks, meaning and field are core/config_key.h's SpecKey, on TrainConfig:
// launch/ declares its own keys so, and places the keys the libraries declare on their spec
// structs (a data source's, an optimizer's) under their tables (component_keys.h).
struct ConfigKey : config::SpecKey<TrainConfig> {
  // A key that only means something while another key has one of some values: a string key
  // (optimizer.momentum with optimizer.name = "sgd"; data.files with data.source = "text" or
  // "tfrecord") or a boolean one (optimizer.ema_momentum with optimizer.ema = true: values
  // {"true"}); setting it otherwise is an error ending in `why`.
  struct Condition {
    std::string key;
    std::vector<std::string> values;
    std::string why;
  };
  std::optional<Condition> only_with;
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
