#include "launch/config_schema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "launch/train_config.h"

namespace troupe::launch {
namespace {

// Every key's value as TOML text.
std::map<std::string, std::string> Snapshot(const TrainConfig& c) {
  std::map<std::string, std::string> values;
  for (const ConfigKey& k : ConfigSchema()) values[k.name] = ValueText(k.get(c));
  return values;
}

// A valid value other than `key`'s default, derived from its type and range; nullopt when the
// key accepts one value only.
std::optional<ConfigValue> OtherValue(const ConfigKey& key) {
  const ConfigValue def = key.get(TrainConfig{});
  switch (key.type) {
    case ConfigType::kInt:
      return ConfigValue(std::get<int64_t>(def) + 1);
    case ConfigType::kFloat: {
      const double d = std::get<double>(def);
      return ConfigValue(std::isinf(key.max) ? d + 1 : (d + key.max) / 2);
    }
    case ConfigType::kBool:
      return ConfigValue(!std::get<bool>(def));
    case ConfigType::kString: {
      const std::string& d = std::get<std::string>(def);
      const std::vector<std::string> choices = ConfigChoices(key);
      if (choices.empty()) return ConfigValue(d + "_other");
      for (const std::string& c : choices) {
        if (c != d) return ConfigValue(c);
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The --set overrides a key's non-default value needs beyond ConfigKey::only_with, which the
// walk adds by itself: collectives.backend = "nccl" needs a GPU device.
std::vector<std::string> Context(const ConfigKey& key) {
  std::vector<std::string> context;
  if (key.only_with) context.push_back(key.only_with->key + "=" + ValueText(key.only_with->value));
  if (key.name == "collectives.backend") context.push_back("train.device=\"gpu\"");
  return context;
}

// No key is parsed and dropped: each, set in a TOML file to a valid non-default value, changes
// its own TrainConfig field to that value and no other key's.
TEST(ConfigSchemaTest, EveryKeySetsItsOwnField) {
  ASSERT_GE(ConfigSchema().size(), 30u);
  std::set<std::string> one_valued;
  for (const ConfigKey& key : ConfigSchema()) {
    SCOPED_TRACE(key.name);
    std::optional<ConfigValue> other = OtherValue(key);
    if (!other) {
      one_valued.insert(key.name);
      continue;
    }
    const std::vector<std::string> context = Context(key);
    Result<TrainConfig> base = ParseTrainConfig("", "t.toml", context);
    ASSERT_TRUE(base.ok()) << base.status();
    const size_t dot = key.name.find('.');
    const std::string text = "[" + key.name.substr(0, dot) + "]\n" + key.name.substr(dot + 1) +
                             " = " + ValueText(*other) + "\n";
    Result<TrainConfig> set = ParseTrainConfig(text, "t.toml", context);
    ASSERT_TRUE(set.ok()) << text << set.status();
    std::map<std::string, std::string> before = Snapshot(*base), after = Snapshot(*set);
    EXPECT_NE(after[key.name], before[key.name]);
    EXPECT_EQ(after[key.name], ValueText(*other));
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
  EXPECT_EQ(c.beta_1, 0.0);
  EXPECT_EQ(
      SetConfigValue(*FindConfigKey("optimizer.learning_rate"), ConfigValue(0.0), c).message(),
      "optimizer.learning_rate: must be a number > 0, got 0");
}

TEST(ConfigSchemaTest, ValueTextIsToml) {
  EXPECT_EQ(ValueText(ConfigValue(int64_t{64})), "64");
  EXPECT_EQ(ValueText(ConfigValue(25.0)), "25.0");  // "25" would read back as an integer
  EXPECT_EQ(ValueText(ConfigValue(1e-7)), "1e-07");
  EXPECT_EQ(ValueText(ConfigValue(true)), "true");
  EXPECT_EQ(ValueText(ConfigValue(std::string("a\"b\\"))), "\"a\\\"b\\\\\"");
}

// `troupe config keys` prints this: every key once, with its default, type and meaning.
TEST(ConfigSchemaTest, ListingShowsEveryKeyWithDefaultTypeAndMeaning) {
  const std::string listing = FormatConfigKeys();
  const TrainConfig defaults;
  for (const ConfigKey& key : ConfigSchema()) {
    SCOPED_TRACE(key.name);
    EXPECT_FALSE(key.meaning.empty());
    const std::string line = "\n" + key.name + " = " + ValueText(key.get(defaults)) + " ";
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
  EXPECT_NE(listing.find("optimizer.beta_2 = 0.999"), std::string::npos);
  EXPECT_NE(listing.find("number in [0, 1)"), std::string::npos);
}

}  // namespace
}  // namespace troupe::launch
