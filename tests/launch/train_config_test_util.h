// Helpers shared by the TrainConfig tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launch/config_schema.h"
#include "launch/train_config.h"

namespace troupe::launch {

inline bool Mentions(const Result<TrainConfig>& r, const std::string& text) {
  return !r.ok() && r.status().code() == StatusCode::kInvalidArgument &&
         r.status().message().find(text) != std::string::npos;
}

inline std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Every key's value as TOML text.
inline std::map<std::string, std::string> Snapshot(const TrainConfig& c) {
  std::map<std::string, std::string> values;
  for (const ConfigKey& k : ConfigSchema()) values[k.name] = ValueText(k.get(c));
  return values;
}

}  // namespace troupe::launch
