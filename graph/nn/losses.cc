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

thread_local double current_label_smoothing = 0.0;

// [N, C] float32 one-hot rows of int `labels` [N] over a static class count C.
Value OneHot(const Value& labels, int64_t classes) {
  std::vector<int32_t> ids(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c) ids[static_cast<size_t>(c)] = static_cast<int32_t>(c);
  Value hit = ops::Equal(ops::ExpandDims(ops::Cast(labels, DType::kInt32), -1),
                         ops::Const(Tensor::FromVector(ids)));
  return ops::Cast(hit, DType::kFloat32);
}

// Keras' categorical_crossentropy(one_hot(y) * (1 - ls) + ls / C, logits, from_logits=True).
Value SmoothedCrossentropy(const Value& labels, const Value& logits, double ls) {
  if (!logits.ok()) return logits;
  const TensorShape& s = logits.shape();
  if (s.unknown_rank() || s.rank() != 2 || s.dim(1) < 1) {
    return Value::Error(
        InvalidArgumentError("label smoothing needs [batch, classes] logits with a "
                             "known class count, got " +
                             s.ToString()));
  }
  const int64_t classes = s.dim(1);
  Value y = ops::Add(ops::Mul(OneHot(labels, classes), ops::ScalarOf(1.0 - ls, DType::kFloat32)),
                     ops::ScalarOf(ls / static_cast<double>(classes), DType::kFloat32));
  Value log_p = ops::LogSoftmax(ops::Cast(logits, DType::kFloat32));
  return ops::Neg(ops::Sum(ops::Mul(y, log_p), {-1}));
}

}  // namespace

LabelSmoothingScope::LabelSmoothingScope(double label_smoothing)
    : previous_(current_label_smoothing) {
  current_label_smoothing = label_smoothing;
}
LabelSmoothingScope::~LabelSmoothingScope() { current_label_smoothing = previous_; }
double LabelSmoothingScope::Current() { return current_label_smoothing; }

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
  const double ls = LabelSmoothingScope::Current();
  if (ls != 0) return SmoothedCrossentropy(y, logits, ls);
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

Value InTopK(const Value& labels, const Value& predictions, int64_t k) {
  if (!predictions.ok()) return predictions;
  const TensorShape& s = predictions.shape();
  if (s.unknown_rank() || s.rank() != 2 || s.dim(1) < 1) {
    return Value::Error(
        InvalidArgumentError("InTopK needs [batch, classes] predictions with a known "
                             "class count, got " +
                             s.ToString()));
  }
  Value x = ops::Cast(predictions, DType::kFloat32);
  Value mask = OneHot(SqueezeLabels(labels), s.dim(1));
  // The label's score. A row holding an infinity or a NaN may get a NaN here (0 * inf); such
  // rows are misses whatever it is (`finite` below), and a NaN compares false.
  Value target = ops::Sum(ops::Mul(mask, x), {-1}, /*keep_dims=*/true);
  Value above = ops::Sum(ops::Cast(ops::Greater(x, target), DType::kFloat32), {-1});
  // x - x is 0 for a finite x and NaN for an infinity or a NaN.
  Value nonfinite = ops::Sum(
      ops::Cast(ops::NotEqual(ops::Sub(x, x), ops::ScalarOf(0, DType::kFloat32)), DType::kFloat32),
      {-1});
  Value in_range = ops::Sum(mask, {-1});  // 1 when the label is a class, else 0
  Value hit = ops::Cast(ops::Less(above, ops::ScalarOf(static_cast<double>(k), DType::kFloat32)),
                        DType::kFloat32);
  Value finite =
      ops::Cast(ops::Equal(nonfinite, ops::ScalarOf(0, DType::kFloat32)), DType::kFloat32);
  return ops::Mul(ops::Mul(hit, finite), in_range);
}

}  // namespace troupe::nn
