// Reading one Keras layer config (internal to the layer factory). Every getter marks its key
// as read; Finish() refuses keys nobody read, so an option Troupe does not implement is an
// error naming the class, the layer and the option instead of being silently ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "graph/nn/activations.h"
#include "graph/nn/initializers.h"

namespace troupe::keras::internal {

// l1 * sum(|w|) + l2 * sum(w^2); both zero when the config holds null.
struct Regularizer {
  double l1 = 0;
  double l2 = 0;
  bool active() const { return l1 != 0 || l2 != 0; }
};

class ConfigReader {
 public:
  // Reads the envelope's class_name, module and config.name, and the base keys (trainable,
  // dtype: the float32, mixed_float16 or mixed_bfloat16 policy).
  static Result<ConfigReader> Open(const nlohmann::json& envelope);

  const std::string& class_name() const { return class_name_; }
  const std::string& module() const { return module_; }
  const std::string& name() const { return name_; }
  bool trainable() const { return trainable_; }
  // The config's dtype policy name; "" when it gives none (the layer follows the model's).
  const std::string& dtype_policy() const { return dtype_policy_; }

  // "Keras layer Dense 'dense_1'", the prefix of every error.
  std::string What() const;
  Status Unsupported(const std::string& option, const std::string& got,
                     const std::string& supported) const;
  Status Invalid(const std::string& option, const std::string& why) const;

  Result<int64_t> Int(const std::string& key, std::optional<int64_t> fallback = std::nullopt);
  Result<double> Double(const std::string& key, std::optional<double> fallback = std::nullopt);
  Result<std::optional<double>> OptionalDouble(const std::string& key);
  Result<std::optional<int64_t>> OptionalInt(const std::string& key);
  Result<bool> Bool(const std::string& key, std::optional<bool> fallback = std::nullopt);
  Result<std::string> String(const std::string& key,
                             std::optional<std::string> fallback = std::nullopt);
  // An int n is [n] * count; a list must have `count` entries (count 0: any length).
  Result<std::vector<int64_t>> Ints(const std::string& key, size_t count,
                                    std::optional<std::vector<int64_t>> fallback = std::nullopt);
  // The key's raw JSON (null when absent), marked read; for values no typed getter covers
  // (Normalization's mean, Rescaling's per-channel scale).
  nlohmann::json Raw(const std::string& key);
  // The key is absent or null (constraints, activity_regularizer, ...).
  Status RequireNull(const std::string& key);
  // The key is absent or equals `value`; refuses anything else naming `value` as supported.
  Status RequireEqual(const std::string& key, const nlohmann::json& value);
  // "channels_last" (or absent/null).
  Status RequireChannelsLast();
  // "valid" or "same", returned as the TF padding name "VALID"/"SAME".
  Result<std::string> Padding(const std::string& key = "padding");
  // An initializer envelope or name. seed:null draws from `default_seed`.
  Result<nn::Initializer> Init(const std::string& key, const std::string& fallback,
                               int64_t default_seed);
  Result<Regularizer> Reg(const std::string& key);
  // A built-in activation name ("linear" when absent or null).
  Result<nn::ActivationFn> Act(const std::string& key = "activation");

  // Refuses keys no getter read.
  Status Finish() const;

 private:
  const nlohmann::json* Get(const std::string& key);
  Status BadType(const std::string& key, const std::string& want) const;
  Result<nn::Initializer> ParseInitializer(const std::string& key, const nlohmann::json& j,
                                           int64_t default_seed);

  std::string class_name_, module_, name_;
  bool trainable_ = true;
  std::string dtype_policy_;
  nlohmann::json config_;
  std::set<std::string> read_;
};

}  // namespace troupe::keras::internal
