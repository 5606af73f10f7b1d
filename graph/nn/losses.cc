#include "graph/nn/losses.h"

#include "graph/ops.h"

namespace troupe::nn {
namespace {

// Number of examples as a float scalar of `dtype`: static when known, else from the shape.
Value BatchSize(const Value& per_example, DType dtype) {
  const TensorShape& s = per_example.shape();
  if (s.IsFullyDefined()) return ops::ScalarOf(static_cast<double>(s.num_elements()), dtype);
  return ops::Cast(ops::Prod(ops::Shape(per_example, DType::kInt32)), dtype);
}

Value SqueezeLabels(const Value& labels) {
  const TensorShape& s = labels.shape();
  if (!s.unknown_rank() && s.rank() == 2 && s.dim(1) == 1) return ops::Squeeze(labels, {1});
  return labels;
}

}  // namespace

Value SparseCategoricalCrossentropyPerExample(const Value& labels, const Value& predictions,
                                              bool from_logits) {
  Value y = ops::Cast(SqueezeLabels(labels), DType::kInt64);
  Value logits = predictions;
  if (!from_logits) {
    // Raw probabilities: clip to [eps, 1 - eps], then log (Keras' path for non-logits).
    const double eps = 1e-7;
    Value p = ops::Minimum(ops::Maximum(predictions, ops::ScalarOf(eps, predictions.dtype())),
                           ops::ScalarOf(1.0 - eps, predictions.dtype()));
    logits = ops::Log(p);
  }
  return ops::SparseSoftmaxCrossEntropyWithLogits(logits, y)[0];
}

Value SparseCategoricalCrossentropy(const Value& labels, const Value& predictions,
                                    bool from_logits) {
  Value losses = SparseCategoricalCrossentropyPerExample(labels, predictions, from_logits);
  if (!losses.ok()) return losses;
  return ops::DivNoNan(ops::Sum(losses), BatchSize(losses, losses.dtype()));
}

Value MeanSquaredError(const Value& y_true, const Value& y_pred) {
  Value per_example = ops::Mean(ops::Square(ops::Sub(y_pred, y_true)), {-1});
  if (!per_example.ok()) return per_example;
  return ops::DivNoNan(ops::Sum(per_example), BatchSize(per_example, per_example.dtype()));
}

Value SparseCategoricalAccuracy(const Value& labels, const Value& predictions) {
  Value pred = ops::Cast(ops::ArgMax(predictions, -1, DType::kInt64), predictions.dtype());
  Value y = ops::Cast(SqueezeLabels(labels), predictions.dtype());
  return ops::Mean(ops::Cast(ops::Equal(pred, y), DType::kFloat32));
}

}  // namespace troupe::nn
