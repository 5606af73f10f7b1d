// Internal to launch/: places the keys a library declares on its spec struct
// (core/config_key.h: input::DataSourceSpec's, nn::OptimizerConfig's) under the spec's table
// of TrainConfig ("data", "optimizer"). The keys of registered components (a data source, an
// optimizer) are shown and taken only with the components declaring them: a key several
// declare (`files`, by text and tfrecord) is one key, shown with all of them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launch/config_schema.h"

namespace troupe::launch {

// `key`, named `table`.`key.name`, storing into `member` of TrainConfig.
template <class Spec>
ConfigKey PlaceKey(const config::SpecKey<Spec>& key, const std::string& table,
                   Spec TrainConfig::*member) {
  ConfigKey k;
  static_cast<config::KeyInfo&>(k) = key;
  k.name = table + "." + key.name;
  k.store = [member, store = key.store](const ConfigValue& v, TrainConfig& c) {
    store(v, c.*member);
  };
  k.get = [member, get = key.get](const TrainConfig& c) { return get(c.*member); };
  if (key.is_set) {
    k.is_set = [member, is_set = key.is_set](const TrainConfig& c) { return is_set(c.*member); };
  }
  return k;
}

template <class Spec>
std::vector<ConfigKey> PlaceKeys(const std::vector<config::SpecKey<Spec>>& keys,
                                 const std::string& table, Spec TrainConfig::*member) {
  std::vector<ConfigKey> placed;
  for (const auto& key : keys) placed.push_back(PlaceKey(key, table, member));
  return placed;
}

// The keys of registered components (name, its keys), chosen by the key `selector`
// ("data.source"): each once, in the order first declared, only with the components that declare
// it; its `why` is the first declarer's why_only.
template <class Spec>
std::vector<ConfigKey> ComponentKeys(
    const std::vector<std::pair<std::string, std::vector<config::SpecKey<Spec>>>>& components,
    const std::string& table, Spec TrainConfig::*member, const std::string& selector) {
  std::vector<ConfigKey> keys;
  for (const auto& [component, declared] : components) {
    for (const auto& key : declared) {
      ConfigKey placed = PlaceKey(key, table, member);
      auto same = std::find_if(keys.begin(), keys.end(),
                               [&placed](const ConfigKey& k) { return k.name == placed.name; });
      if (same == keys.end()) {
        const std::string why = key.why_only.empty() ? "it is another's key" : key.why_only;
        placed.only_with = ConfigKey::Condition{selector, {component}, why};
        keys.push_back(std::move(placed));
      } else {
        same->only_with->values.push_back(component);
      }
    }
  }
  return keys;
}

}  // namespace troupe::launch
