#include "launch/config_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "input/data_source.h"
#include "launch/train_config.h"

namespace troupe::launch {
namespace {

// Every key's value as TOML text.
std::map<std::string, std::string> Snapshot(const TrainConfig& c) {
  std::map<std::string, std::string> values;
  for (const ConfigKey& k : ConfigSchema()) values[k.name] = ValueText(k.get(c));
  return values;
}

// Valid values other than `current` for `key`, derived from its type and range (every other
// choice of a string key); empty when the key accepts one value only.
std::vector<ConfigValue> OtherValues(const ConfigKey& key, const ConfigValue& current) {
  switch (key.type) {
    case ConfigType::kInt:
      return {ConfigValue(std::get<int64_t>(current) + 1)};
    case ConfigType::kFloat: {
      // An unset optional key reads NaN: any value in range sets it.
      const double d = std::isnan(std::get<double>(current)) ? key.min : std::get<double>(current);
      return {ConfigValue(std::isinf(key.max) ? d + 1 : (d + key.max) / 2)};
    }
    case ConfigType::kBool:
      return {ConfigValue(!std::get<bool>(current))};
    case ConfigType::kString: {
      const std::string& d = std::get<std::string>(current);
      const std::vector<std::string> choices = ConfigChoices(key);
      if (choices.empty()) return {ConfigValue(d + "_other")};
      std::vector<ConfigValue> others;
      for (const std::string& c : choices) {
        if (c != d) others.emplace_back(c);
      }
      return others;
    }
    case ConfigType::kIntList: {
      std::vector<int64_t> list = std::get<std::vector<int64_t>>(current);
      const int64_t low = std::isinf(key.min) ? 1 : static_cast<int64_t>(key.min);
      if (list.empty()) return {ConfigValue(std::vector<int64_t>{low, low + 1})};
      list[0] += 1;
      return {ConfigValue(list)};
    }
    case ConfigType::kStringList: {
      std::vector<std::string> list = std::get<std::vector<std::string>>(current);
      list.push_back("other");
      return {ConfigValue(list)};
    }
    case ConfigType::kFloatList: {
      std::vector<double> list = std::get<std::vector<double>>(current);
      if (list.empty()) return {ConfigValue(std::vector<double>{0.5, 0.25})};
      list[0] += 1;
      return {ConfigValue(list)};
    }
  }
  return {};
}

// The keys (name -> TOML value) a key's non-default value needs: its only_with (the first
// value), what that data source needs (CheckCombinations), and a GPU device for
// collectives.backend = "nccl".
std::map<std::string, std::string> Context(const ConfigKey& key) {
  std::map<std::string, std::string> context;
  if (!key.only_with) {
    if (key.name == "collectives.backend") context["train.device"] = "\"gpu\"";
    return context;
  }
  const std::string& value = key.only_with->values.at(0);
  const bool boolean = FindConfigKey(key.only_with->key)->type == ConfigType::kBool;
  context[key.only_with->key] = boolean ? value : ValueText(ConfigValue(value));
  // Schedules need their required keys (ValidateOptimizerConfig runs on every parse).
  if (key.only_with->key == "optimizer.schedule.kind") {
    if (value != "piecewise" && key.name != "optimizer.schedule.decay_steps") {
      context["optimizer.schedule.decay_steps"] = "100";
    }
    // A warmup needs the rate it climbs to.
    if (key.name == "optimizer.schedule.warmup_steps") {
      context["optimizer.schedule.warmup_target"] = "0.01";
    }
    // Boundaries and values are valid only together: each starts from a matching pair.
    if (key.name == "optimizer.schedule.boundaries" || key.name == "optimizer.schedule.values") {
      context["optimizer.schedule.boundaries"] = "[10, 20]";
      context["optimizer.schedule.values"] = "[1.0, 0.5, 0.25]";
    }
  }
  if (value == "exponential" || value == "inverse_time") {
    context["optimizer.schedule.decay_rate"] = "0.5";  // its own test starts from a valid rate
  }
  if (key.only_with->key == "data.source" && (value == "tfrecord" || value == "synthetic")) {
    context["data.num_classes"] = "10";
  }
  if (key.only_with->key == "data.source" && value == "tfrecord") {
    context["data.files"] = "\"train-*.tfrecord\"";
  }
  // The text source takes num_classes only as a classifier (text_labels = "file").
  if (key.name == "data.num_classes" && value == "text") context["data.text_labels"] = "\"file\"";
  return context;
}

// A TOML file setting `values` (key name -> TOML value), each in its own table:
// data.features.image.key goes to [data.features.image].
std::string TomlText(const std::map<std::string, std::string>& values) {
  std::map<std::string, std::string> tables;
  for (const auto& [name, value] : values) {
    const std::string table(ConfigTable(name));
    tables[table] += name.substr(table.size() + 1) + " = " + value + "\n";
  }
  std::string text;
  for (const auto& [table, lines] : tables) text += "[" + table + "]\n" + lines;
  return text;
}

// No key is parsed and dropped: each, set in a TOML file to a valid other value, changes its
// own TrainConfig field to that value and no other key's.
TEST(ConfigSchemaTest, EveryKeySetsItsOwnField) {
  ASSERT_GE(ConfigSchema().size(), 30u);
  std::set<std::string> one_valued;
  for (const ConfigKey& key : ConfigSchema()) {
    SCOPED_TRACE(key.name);
    std::map<std::string, std::string> context = Context(key);
    const std::string base_text = TomlText(context);
    Result<TrainConfig> base = ParseTrainConfig(base_text, "t.toml");
    ASSERT_TRUE(base.ok()) << base_text << base.status();
    const std::vector<ConfigValue> others = OtherValues(key, key.get(*base));
    if (others.empty()) {
      one_valued.insert(key.name);
      continue;
    }
    // A string key's first other choice that parses on its own (data.source = "text" does;
    // "tfrecord" needs more keys).
    std::optional<TrainConfig> set;
    std::string other, text;
    Status last;
    for (const ConfigValue& candidate : others) {
      other = ValueText(candidate);
      context[key.name] = other;
      text = TomlText(context);
      Result<TrainConfig> parsed = ParseTrainConfig(text, "t.toml");
      if (parsed.ok()) {
        set = *parsed;
        break;
      }
      last = parsed.status();
    }
    ASSERT_TRUE(set.has_value()) << text << last;
    std::map<std::string, std::string> before = Snapshot(*base), after = Snapshot(*set);
    EXPECT_NE(after[key.name], before[key.name]);
    EXPECT_EQ(after[key.name], other);
    after[key.name] = before[key.name];
    EXPECT_EQ(after, before) << "setting " << key.name << " changed other keys";
  }
  // Keys with one accepted value cannot be dropped unnoticed; a new one must be named here.
  EXPECT_EQ(one_valued, (std::set<std::string>{}));
  for (const std::string& name : one_valued) {
    const ConfigKey* key = FindConfigKey(name);
    ASSERT_EQ(ConfigChoices(*key).size(), 1u);
    EXPECT_EQ(ValueText(key->get(TrainConfig{})), ValueText(ConfigChoices(*key)[0]));
    EXPECT_FALSE(ParseTrainConfig("", "t.toml", {name + "=bogus"}).ok()) << name;
  }
}

TEST(ConfigSchemaTest, RangesAndTypesAreChecked) {
  TrainConfig c;
  const ConfigKey& epochs = *FindConfigKey("train.epochs");
  Status s = SetConfigValue(epochs, ConfigValue(int64_t{0}), c);
  EXPECT_EQ(s.message(), "train.epochs: must be >= 1, got 0");
  s = SetConfigValue(epochs, ConfigValue(2.5), c);
  EXPECT_EQ(s.message(), "train.epochs: expected an integer, got floating-point");
  const ConfigKey& beta = *FindConfigKey("optimizer.beta_1");
  EXPECT_EQ(SetConfigValue(beta, ConfigValue(1.0), c).message(),
            "optimizer.beta_1: must be a number in [0, 1), got 1");
  EXPECT_TRUE(SetConfigValue(beta, ConfigValue(int64_t{0}), c).ok());  // integers are numbers
  EXPECT_EQ(c.optimizer.beta_1, 0.0);
  EXPECT_EQ(
      SetConfigValue(*FindConfigKey("optimizer.learning_rate"), ConfigValue(-1.0), c).message(),
      "optimizer.learning_rate: must be a number >= 0, got -1");
}

TEST(ConfigSchemaTest, ValueTextIsToml) {
  EXPECT_EQ(ValueText(ConfigValue(int64_t{64})), "64");
  EXPECT_EQ(ValueText(ConfigValue(25.0)), "25.0");  // "25" would read back as an integer
  EXPECT_EQ(ValueText(ConfigValue(1e-7)), "1e-07");
  EXPECT_EQ(ValueText(ConfigValue(true)), "true");
  EXPECT_EQ(ValueText(ConfigValue(std::string("a\"b\\"))), "\"a\\\"b\\\\\"");
  EXPECT_EQ(ValueText(ConfigValue(std::vector<int64_t>{28, 28, 1})), "[28, 28, 1]");
  EXPECT_EQ(ValueText(ConfigValue(std::vector<int64_t>{})), "[]");
}

TEST(ConfigSchemaTest, IntListsAreChecked) {
  using List = std::vector<int64_t>;
  TrainConfig c;
  const ConfigKey& shape = *FindConfigKey("data.features.image.shape");
  EXPECT_EQ(shape.type, ConfigType::kIntList);
  EXPECT_EQ(TypeText(shape), "list of integers >= 1");
  ASSERT_TRUE(SetConfigValue(shape, ConfigValue(List{32, 32, 3}), c).ok());
  EXPECT_EQ(c.data.image.shape, (List{32, 32, 3}));
  EXPECT_EQ(SetConfigValue(shape, ConfigValue(List{32, 0, 3}), c).message(),
            "data.features.image.shape: every entry must be >= 1, got [32, 0, 3]");
  EXPECT_EQ(SetConfigValue(shape, ConfigValue(List{}), c).message(),
            "data.features.image.shape: must not be empty, got []");
  EXPECT_EQ(SetConfigValue(shape, ConfigValue(int64_t{28}), c).message(),
            "data.features.image.shape: expected a list of integers ([a, b, ...]), got integer");
  EXPECT_EQ(c.data.image.shape, (List{32, 32, 3}));  // refused values store nothing
  // A label's shape may be empty: a scalar.
  const ConfigKey& label = *FindConfigKey("data.features.label.shape");
  ASSERT_TRUE(SetConfigValue(label, ConfigValue(List{}), c).ok());
  EXPECT_TRUE(c.data.label.shape.empty());
  ASSERT_TRUE(SetConfigValue(label, ConfigValue(List{4}), c).ok());
  EXPECT_EQ(c.data.label.shape, (List{4}));
  // resize: [] or [height, width] (the key's extra check).
  const ConfigKey& resize = *FindConfigKey("data.augment.resize");
  ASSERT_TRUE(resize.extra_check);
  ASSERT_TRUE(SetConfigValue(resize, ConfigValue(List{24, 20}), c).ok());
  EXPECT_EQ(c.resize, (List{24, 20}));
  ASSERT_TRUE(SetConfigValue(resize, ConfigValue(List{}), c).ok());
  EXPECT_EQ(SetConfigValue(resize, ConfigValue(List{24}), c).message(),
            "data.augment.resize: must be empty or [height, width], got [24]");
  EXPECT_EQ(SetConfigValue(resize, ConfigValue(List{1, 2, 3}), c).message(),
            "data.augment.resize: must be empty or [height, width], got [1, 2, 3]");
  // A list is no scalar.
  EXPECT_EQ(SetConfigValue(*FindConfigKey("train.epochs"), ConfigValue(List{1}), c).message(),
            "train.epochs: expected an integer, got array");
}

// The [data] keys: type (choices, range), default and the sources they go with.
TEST(ConfigSchemaTest, DataKeys) {
  struct Want {
    std::string name, type, default_value;
    std::vector<std::string> only_with;  // data.source values; empty: always
  };
  const std::vector<std::string> images = {"fashion_mnist", "tfrecord", "synthetic"};
  const std::vector<Want> wants = {
      {"data.dir", "string", "\"/usr/share/datasets/fashion-mnist\"", {}},
      {"data.files", "string", "\"\"", {"text", "tfrecord"}},
      {"data.eval_files", "string", "\"\"", {"tfrecord"}},
      {"data.compression", "\"\" | \"GZIP\" | \"ZLIB\"", "\"\"", {"tfrecord"}},
      {"data.sequence_length", "integer >= 1", "0", {"text"}},
      {"data.num_classes", "integer >= 1", "0", {"text", "tfrecord", "synthetic"}},
      {"data.synthetic_examples", "integer >= 1", "60000", {"synthetic"}},
      {"data.shuffle_buffer", "integer >= 0", "10000", {}},
      {"data.auto_shard", "\"AUTO\" | \"FILE\" | \"DATA\" | \"OFF\"", "\"AUTO\"", {}},
      {"data.prefetch", "integer >= 1", "2", {}},
      {"data.decode_threads", "integer >= 0", "0", {}},
      {"data.features.image.key", "string", "\"image\"", {"tfrecord"}},
      {"data.features.image.decode",
       "\"raw\" | \"png\" | \"jpeg\" | \"int64\" | \"float\"",
       "\"raw\"",
       {"tfrecord"}},
      {"data.features.image.shape",
       "list of integers >= 1",
       "[28, 28, 1]",
       {"tfrecord", "synthetic"}},
      {"data.features.image.scale", "number", "1.0", {"tfrecord"}},
      {"data.features.image.offset", "number", "0.0", {"tfrecord"}},
      {"data.features.label.key", "string", "\"label\"", {"tfrecord"}},
      {"data.features.label.dtype", "\"int64\" | \"float\"", "\"int64\"", {"tfrecord"}},
      {"data.features.label.shape", "list of integers >= 1", "[]", {"tfrecord"}},
      {"data.augment.resize", "list of integers >= 1", "[]", images},
      {"data.augment.random_crop_padding", "integer >= 0", "0", images},
      {"data.augment.random_flip", "true | false", "false", images},
  };
  for (const Want& want : wants) {
    SCOPED_TRACE(want.name);
    const ConfigKey* key = FindConfigKey(want.name);
    ASSERT_NE(key, nullptr);
    EXPECT_EQ(TypeText(*key), want.type);
    EXPECT_EQ(ValueText(key->get(TrainConfig{})), want.default_value);
    if (want.only_with.empty()) {
      EXPECT_FALSE(key->only_with.has_value());
    } else {
      ASSERT_TRUE(key->only_with.has_value());
      EXPECT_EQ(key->only_with->key, "data.source");
      EXPECT_EQ(key->only_with->values, want.only_with);
      EXPECT_FALSE(key->only_with->why.empty());
    }
  }
  // data.source's choices are the registry's.
  const ConfigKey& source = *FindConfigKey("data.source");
  EXPECT_EQ(ConfigChoices(source), input::RegisteredDataSourceNames());
  EXPECT_EQ(ValueText(source.get(TrainConfig{})), "\"fashion_mnist\"");
}

TEST(ConfigSchemaTest, TablesOfKeys) {
  EXPECT_EQ(ConfigTable("data.features.image.key"), "data.features.image");
  EXPECT_EQ(ConfigTable("train.epochs"), "train");
  for (const char* table : {"data", "data.features", "data.features.image", "data.augment"}) {
    EXPECT_TRUE(IsConfigTable(table)) << table;
  }
  for (const char* table : {"dat", "data.feature", "data.source", "data.augment.resize", ""}) {
    EXPECT_FALSE(IsConfigTable(table)) << table;
  }
  ConfigKey::Condition c{"data.source", {"tfrecord"}, ""};
  EXPECT_EQ(ConditionValuesText(c), "\"tfrecord\"");
  c.values = {"text", "tfrecord"};
  EXPECT_EQ(ConditionValuesText(c), "\"text\" or \"tfrecord\"");
  c.values = {"fashion_mnist", "tfrecord", "synthetic"};
  EXPECT_EQ(ConditionValuesText(c), "\"fashion_mnist\", \"tfrecord\" or \"synthetic\"");
}

// `troupe config keys` prints this: every key once, with its default, type and meaning.
TEST(ConfigSchemaTest, ListingShowsEveryKeyWithDefaultTypeAndMeaning) {
  const std::string listing = FormatConfigKeys();
  const TrainConfig defaults = ConfigDefaults();  // what a config leaving a key out gets
  for (const ConfigKey& key : ConfigSchema()) {
    SCOPED_TRACE(key.name);
    EXPECT_FALSE(key.meaning.empty());
    const bool unset = key.is_set && !key.is_set(defaults);
    const std::string line =
        "\n" + key.name + (unset ? " (unset)" : " = " + ValueText(key.get(defaults))) + " ";
    const size_t at = listing.find(line);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(listing.find(line, at + 1), std::string::npos);
    const std::string rest = listing.substr(at + line.size());
    const std::string type_line = rest.substr(0, rest.find('\n'));
    EXPECT_NE(type_line.find(TypeText(key)), std::string::npos) << type_line;
    EXPECT_EQ(rest.find("\n    " + key.meaning), type_line.size());
  }
  EXPECT_NE(listing.find("optimizer.momentum = 0.0"), std::string::npos);
  EXPECT_NE(listing.find("Only with optimizer.name = \"sgd\"."), std::string::npos);
  // Optional numbers have no default value to show (not a sentinel like -1); beta_2's depends on
  // the optimizer.
  EXPECT_NE(listing.find("\noptimizer.beta_2 (unset) "), std::string::npos);
  EXPECT_NE(listing.find("\noptimizer.weight_decay (unset) "), std::string::npos);
  EXPECT_NE(listing.find("\noptimizer.schedule.warmup_target (unset) "), std::string::npos);
  EXPECT_NE(listing.find("number in [0, 1)"), std::string::npos);
  EXPECT_NE(listing.find("data.features.image.shape = [28, 28, 1]"), std::string::npos);
  EXPECT_NE(listing.find("Only with data.source = \"text\" or \"tfrecord\"."), std::string::npos);
  // Each table's keys are a block: a blank line before the first key of [data.augment].
  EXPECT_NE(listing.find("\n\ndata.augment.resize = "), std::string::npos);
  EXPECT_EQ(listing.find("not supported yet"), std::string::npos);
}

}  // namespace
}  // namespace troupe::launch
