// The model registry: `[model] name` -> a factory of nn::Model. The zoo's models (lenet5, ...)
// are registered on first use; a program or test registers its own with RegisterModel before
// the training loop asks for it by name, with the config keys of its own it takes (relative to
// [model]: a model declaring `units` is configured by model.units, shown and taken only with
// it); the factory reads their values from ModelSpec::options.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config_key.h"
#include "core/result.h"
#include "core/tensor_shape.h"
#include "graph/nn/model.h"

namespace troupe::models {

// What a factory gets: the name asked for and the job seed (initial weights must depend only
// on it, so every process builds the same model without communicating).
struct ModelSpec {
  std::string name;
  int64_t seed = 0;
  // A Keras model JSON / .keras file: when set, CreateModel loads it instead of `name`.
  std::string keras;
  // The shape of one example (no batch dimension), when the caller knows it: the zoo's
  // Keras-defined models are written for it.
  std::optional<TensorShape> input_shape;
  // Labels are in [0, num_classes) (classes, or a vocabulary); 0: the model's default.
  int64_t num_classes = 0;
  // The values of the model's own keys the config set (ModelOptions::options).
  config::ConfigOptions options;
};

// Where the config keeps the values of registered models' own keys ([model] table).
struct ModelOptions {
  config::ConfigOptions options;
};
// A key of a registered model, relative to [model] (config::Option<ModelOptions>).
using ModelKey = config::SpecKey<ModelOptions>;

// A factory returns the model unbuilt; the caller builds it for its input shape.
using ModelFactory = std::function<Result<std::unique_ptr<nn::Model>>(const ModelSpec&)>;

// AlreadyExists when `name` is taken.
Status RegisterModel(const std::string& name, ModelFactory factory,
                     std::vector<ModelKey> keys = {});
// Every registered model's own keys, in registration order (most have none).
std::vector<std::pair<std::string, std::vector<ModelKey>>> RegisteredModelKeys();
// NotFound listing the registered names when `spec.name` is not one of them.
Result<std::unique_ptr<nn::Model>> CreateModel(const ModelSpec& spec);
// Sorted.
std::vector<std::string> RegisteredModelNames();

}  // namespace troupe::models
