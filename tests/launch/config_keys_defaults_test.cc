// `troupe config keys` (FormatConfigKeys, what the binary prints) lists as each key's default
// the value a config that leaves the key out runs with, and a meaning that names a default
// ("0, the default, is auto") names the listed one.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "launch/config_schema.h"
#include "launch/train_config.h"

namespace troupe::launch {
namespace {

// The listing's head for `key` as `config` holds it: "name = value" or "name (unset)".
std::string Head(const ConfigKey& key, const TrainConfig& config) {
  const bool unset = key.is_set && !key.is_set(config);
  return key.name + (unset ? " (unset)" : " = " + ValueText(key.get(config)));
}

TEST(ConfigKeysDefaultsTest, ListedDefaultIsWhatAConfigLeavingTheKeyOutRunsWith) {
  Result<TrainConfig> resolved = ParseTrainConfig("", "empty.toml");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  const std::string listing = FormatConfigKeys();
  for (const ConfigKey& k : ConfigSchema()) {
    const std::string head = Head(k, *resolved);
    // The head is followed by the padding before the type.
    EXPECT_NE(listing.find("\n" + head + " "), std::string::npos)
        << k.name << ": a config leaving it out runs with `" << head << "`, the listing says:\n"
        << listing.substr(listing.find("\n" + k.name), 200);
  }
}

// The one default a TOML config gets that a TrainConfig built in code does not.
TEST(ConfigKeysDefaultsTest, ConfigDefaultsDifferFromTrainConfigOnlyInReplicas) {
  const TrainConfig in_code;
  const TrainConfig toml = ConfigDefaults();
  for (const ConfigKey& k : ConfigSchema()) {
    if (k.name == "train.replicas_per_process") {
      EXPECT_EQ(ValueText(k.get(toml)), "0");  // auto
      EXPECT_EQ(ValueText(k.get(in_code)), "1");
      continue;
    }
    EXPECT_EQ(Head(k, toml), Head(k, in_code));
  }
}

TEST(ConfigKeysDefaultsTest, MeaningsNameTheListedDefault) {
  const TrainConfig defaults = ConfigDefaults();
  const std::regex says_default(R"((\S+), the default)");
  int checked = 0;
  for (const ConfigKey& k : ConfigSchema()) {
    std::smatch m;
    if (!std::regex_search(k.meaning, m, says_default)) continue;
    ++checked;
    EXPECT_EQ(m[1].str(), ValueText(k.get(defaults))) << k.name << ": " << k.meaning;
  }
  EXPECT_GE(checked, 1);  // train.replicas_per_process's "0, the default, is auto"
}

}  // namespace
}  // namespace troupe::launch
