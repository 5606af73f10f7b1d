#include "graph/nn/compiled_loss.h"

#include <utility>

#include "graph/func_graph.h"
#include "graph/nn/losses.h"
#include "graph/ops.h"

namespace troupe::nn {
namespace {

struct NamedLoss {
  std::string_view name;
  LossKind kind;
};

// The canonical name first for each kind, then Keras' aliases and class names.
constexpr NamedLoss kLossNames[] = {
    {"sparse_categorical_crossentropy", LossKind::kSparseCategoricalCrossentropy},
    {"categorical_crossentropy", LossKind::kCategoricalCrossentropy},
    {"binary_crossentropy", LossKind::kBinaryCrossentropy},
    {"mean_squared_error", LossKind::kMeanSquaredError},
    {"mean_absolute_error", LossKind::kMeanAbsoluteError},
    {"huber", LossKind::kHuber},
    {"mse", LossKind::kMeanSquaredError},
    {"mae", LossKind::kMeanAbsoluteError},
    {"huber_loss", LossKind::kHuber},
    {"SparseCategoricalCrossentropy", LossKind::kSparseCategoricalCrossentropy},
    {"CategoricalCrossentropy", LossKind::kCategoricalCrossentropy},
    {"BinaryCrossentropy", LossKind::kBinaryCrossentropy},
    {"MeanSquaredError", LossKind::kMeanSquaredError},
    {"MeanAbsoluteError", LossKind::kMeanAbsoluteError},
    {"Huber", LossKind::kHuber},
};

Value CategoricalLoss(LossKind kind, const Value& labels, const Value& predictions,
                      bool from_logits) {
  if (kind == LossKind::kCategoricalCrossentropy) {
    return CategoricalCrossentropy(labels, predictions, from_logits);
  }
  return SparseCategoricalCrossentropy(labels, predictions, from_logits);
}

}  // namespace

Result<LossKind> LossKindFromName(std::string_view name) {
  for (const NamedLoss& n : kLossNames) {
    if (n.name == name) return n.kind;
  }
  std::string names;
  for (const std::string& n : LossKindNames()) names += (names.empty() ? "" : ", ") + n;
  return InvalidArgumentError("unknown loss '" + std::string(name) + "': use one of " + names +
                              " (Keras' names; mse and mae are aliases)");
}

std::string_view LossKindName(LossKind kind) {
  for (const NamedLoss& n : kLossNames) {
    if (n.kind == kind) return n.name;
  }
  return "unknown";
}

std::vector<std::string> LossKindNames() {
  return {"sparse_categorical_crossentropy",
          "categorical_crossentropy",
          "binary_crossentropy",
          "mean_squared_error",
          "mean_absolute_error",
          "huber",
          "mse",
          "mae"};
}

bool IsCategorical(LossKind kind) {
  return kind == LossKind::kSparseCategoricalCrossentropy ||
         kind == LossKind::kCategoricalCrossentropy;
}

bool IsCrossentropy(LossKind kind) {
  return IsCategorical(kind) || kind == LossKind::kBinaryCrossentropy;
}

Value LogitsBehindActivation(const Value& outputs) {
  if (!outputs.ok() || !outputs.symbolic()) return Value();
  const Node& node = outputs.graph()->node(outputs.node_out().node);
  if ((node.op != "Softmax" && node.op != "Sigmoid") || node.inputs.size() != 1) return Value();
  return Value::Symbolic(outputs.graph_ptr(), node.inputs[0]);
}

Value CompiledLoss(const LossSpec& spec, const Value& labels, const Value& outputs) {
  if (!outputs.ok()) return outputs;
  if (!IsCrossentropy(spec.kind)) {
    switch (spec.kind) {
      case LossKind::kMeanSquaredError:
        return MeanSquaredError(labels, outputs);
      case LossKind::kMeanAbsoluteError:
        return MeanAbsoluteError(labels, outputs);
      default:
        return Huber(labels, outputs);
    }
  }
  Value predictions = outputs;
  bool from_logits = spec.from_logits.value_or(true);
  if (Value logits = LogitsBehindActivation(outputs); logits.defined()) {
    predictions = logits;
    from_logits = true;
  }
  if (spec.kind == LossKind::kBinaryCrossentropy) {
    return BinaryCrossentropy(labels, predictions, from_logits);
  }
  const TensorShape& s = predictions.shape();
  if (!s.unknown_rank() && s.rank() > 2) {
    // A prediction per position (a language model's [batch, time, vocab]): the mean over every
    // position, as Keras' loss averages over all but the class axis.
    const int64_t classes = s.dim(s.rank() - 1);
    return CategoricalLoss(spec.kind, ops::Reshape(labels, {-1}),
                           ops::Reshape(predictions, {-1, classes}), from_logits);
  }
  return CategoricalLoss(spec.kind, labels, predictions, from_logits);
}

std::string DescribeLoss(const LossSpec& spec, std::string_view output_activation) {
  std::string text(LossKindName(spec.kind));
  if (!IsCrossentropy(spec.kind)) return text + " of the outputs";
  if (output_activation == "softmax" || output_activation == "sigmoid") {
    return text + " on the logits before the output " + std::string(output_activation) +
           " (as Keras)";
  }
  return text + (spec.from_logits.value_or(true) ? " from logits (the outputs)"
                                                 : " of the outputs as probabilities "
                                                   "(from_logits = false: clipped to [1e-7, "
                                                   "1 - 1e-7])");
}

}  // namespace troupe::nn
