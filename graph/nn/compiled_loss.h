// The loss a model trains on, as Keras' model.compile(loss=...) computes it from the model's
// outputs (graph/nn/losses.h holds the loss functions themselves).
//
// Contract. Keras (TF backend, keras/src/backend/tensorflow/nn.py `_get_logits`) never applies a
// cross-entropy to the output of a softmax or sigmoid activation: it takes the activation's
// input instead (the `_keras_logits` the activation attaches, or the input of a graph-mode
// Softmax/Sigmoid op) and uses the from-logits form, whatever from_logits says. CompiledLoss
// does the same while tracing: an output produced by a Softmax or Sigmoid op is replaced by that
// op's input. Any other output is logits when `from_logits` is true or unset (Troupe's default:
// what a model ending in a linear layer means), and probabilities when it is false (Keras'
// default for a loss named by string: clipped to [1e-7, 1 - 1e-7] before the log). Regression
// losses take the outputs as they are.
//
// Usage:
//   TROUPE_ASSIGN_OR_RETURN(nn::LossKind kind, nn::LossKindFromName("binary_crossentropy"));
//   nn::LossSpec spec{kind, /*from_logits=*/std::nullopt};
//   Value loss = nn::CompiledLoss(spec, labels, model.Call(features, true));
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "graph/value.h"

namespace troupe::nn {

enum class LossKind {
  kSparseCategoricalCrossentropy,
  kCategoricalCrossentropy,  // of the integer labels one-hot encoded (to_categorical)
  kBinaryCrossentropy,
  kMeanSquaredError,
  kMeanAbsoluteError,
  kHuber,  // delta 1 (Keras' default)
};

struct LossSpec {
  LossKind kind = LossKind::kSparseCategoricalCrossentropy;
  // Unset: logits unless a softmax or sigmoid produced the outputs (see above).
  std::optional<bool> from_logits;
};

// Keras' names and aliases: "sparse_categorical_crossentropy", "categorical_crossentropy",
// "binary_crossentropy", "mse" / "mean_squared_error", "mae" / "mean_absolute_error", "huber",
// or a class name ("SparseCategoricalCrossentropy", "MeanSquaredError", ...). InvalidArgument
// listing the names otherwise.
Result<LossKind> LossKindFromName(std::string_view name);
// The canonical (snake_case) name.
std::string_view LossKindName(LossKind kind);
// The names a config may use: the canonical ones, then the aliases mse and mae.
std::vector<std::string> LossKindNames();
bool IsCrossentropy(LossKind kind);
// Sparse or one-hot categorical cross-entropy: one output per class. The other losses compare
// one output unit with each label.
bool IsCategorical(LossKind kind);

// The input of the Softmax or Sigmoid op that produced `outputs` in the graph being traced, or
// an undefined Value when `outputs` came from any other op or is eager (Keras' `_get_logits`).
Value LogitsBehindActivation(const Value& outputs);

// The scalar mean loss of `outputs` against int `labels` (sum_over_batch_size). Outputs of
// rank > 2 with a categorical loss ([batch, positions..., classes], a language model's) are
// scored per position against labels [batch, positions...].
Value CompiledLoss(const LossSpec& spec, const Value& labels, const Value& outputs);

// One phrase for the start-up line: what the loss is computed on for a model whose output layer
// applies `output_activation` ("softmax", "sigmoid" or "" for none), e.g.
// "sparse_categorical_crossentropy on the logits before the output softmax (as Keras)".
std::string DescribeLoss(const LossSpec& spec, std::string_view output_activation);

}  // namespace troupe::nn
