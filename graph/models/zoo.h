// The model zoo's Keras-defined models (mlp, resnet20, resnet56, resnet50, transformer_lm, and
// a Keras twin of lenet5), written as Keras 3 Functional JSON (graph/keras/builder.h): the training
// loop loads them like any `[model] keras` file, Keras reads the same JSON, and `troupe model show
// NAME
// --json` hands it to a user to edit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/tensor_shape.h"

namespace troupe::models {

// Sorted.
std::vector<std::string> ZooModelNames();

// The model's Keras JSON for examples of `input_shape` (default: the model's own, e.g.
// 28x28x1 for mlp and the CIFAR-style ResNets, 224x224x3 for resnet50, 64 token ids for
// transformer_lm) and `num_classes` outputs (default: 10; 1000 for resnet50; a 256-token
// vocabulary for transformer_lm), with every tensor's shape filled in (by building the model
// once: what Keras' reader and a user editing the JSON want). NotFound listing the names for an
// unknown model.
Result<nlohmann::json> ZooModelJson(const std::string& name,
                                    std::optional<TensorShape> input_shape = std::nullopt,
                                    int64_t num_classes = 0);

// The same model as Troupe's loader needs it: tensor shapes left as placeholders (the loader
// reads only the wiring), so creating a zoo model for training builds it once, not twice.
Result<nlohmann::json> ZooModelConfig(const std::string& name,
                                      std::optional<TensorShape> input_shape = std::nullopt,
                                      int64_t num_classes = 0);

}  // namespace troupe::models
