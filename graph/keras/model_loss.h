// What a Keras model's files say about the loss it trains on: the activation of its output
// layer (which decides whether Keras' cross-entropies see logits, graph/nn/compiled_loss.h),
// and the loss a .keras file was compiled with (its config.json's compile_config).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "graph/nn/compiled_loss.h"

namespace troupe::keras {

// "softmax" or "sigmoid" when the model's output layer applies one (a Dense or Conv's
// activation, an Activation layer, a Softmax layer), else "". `model` is model.to_json()
// parsed, or a .keras file's config.json.
std::string OutputLayerActivation(const nlohmann::json& model);

// The loss in `model`'s compile_config: nullopt when the model was not compiled (to_json()
// output never is). A loss given by name takes Keras' from_logits default (false), a loss
// object its own. Unimplemented naming the loss and the key to set when Troupe lacks it.
Result<std::optional<nn::LossSpec>> CompiledLossOf(const nlohmann::json& model);

}  // namespace troupe::keras
