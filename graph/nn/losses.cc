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

// Keras' backend.epsilon(): how far from 0 and 1 probabilities are clipped before the log.
constexpr double kEpsilon = 1e-7;

// sum_over_batch_size: the sum of the per-example (or per-position) losses over their count.
Value MeanOverBatch(const Value& losses) {
  if (!losses.ok()) return losses;
  return ops::DivNoNan(ops::Sum(losses), BatchSize(losses, losses.dtype()));
}

// Targets of `predictions`' dtype and rank: Keras' squeeze_or_expand_to_same_rank, which drops a
// trailing 1 of the higher-ranked side or adds one to the lower (labels [N] against [N, 1]).
Value SameRankTargets(const Value& targets, const Value& predictions) {
  Value y = ops::Cast(targets, predictions.dtype());
  const TensorShape& ts = targets.shape();
  const TensorShape& ps = predictions.shape();
  if (ts.unknown_rank() || ps.unknown_rank()) return y;
  if (ts.rank() + 1 == ps.rank() && ps.dim(ps.rank() - 1) == 1) return ops::ExpandDims(y, -1);
  if (ts.rank() == ps.rank() + 1 && ts.dim(ts.rank() - 1) == 1) return ops::Squeeze(y, {-1});
  return y;
}

// [N, C] float32 one-hot rows of int `labels` [N] over a static class count C.
Value OneHot(const Value& labels, int64_t classes) {
  std::vector<int32_t> ids(static_cast<size_t>(classes));
  for (int64_t c = 0; c < classes; ++c) ids[static_cast<size_t>(c)] = static_cast<int32_t>(c);
  Value hit = ops::Equal(ops::ExpandDims(ops::Cast(labels, DType::kInt32), -1),
                         ops::Const(Tensor::FromVector(ids)));
  return ops::Cast(hit, DType::kFloat32);
}

// Keras' smoothed categorical targets one_hot(labels) * (1 - ls) + ls / C (one-hot for ls = 0).
Value SmoothedOneHot(const Value& labels, int64_t classes, double ls) {
  Value y = OneHot(labels, classes);
  if (ls == 0) return y;
  return ops::Add(ops::Mul(y, ops::ScalarOf(1.0 - ls, DType::kFloat32)),
                  ops::ScalarOf(ls / static_cast<double>(classes), DType::kFloat32));
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
  Value y = SmoothedOneHot(labels, s.dim(1), ls);
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
    Value p = ops::Minimum(ops::Maximum(predictions, ops::ScalarOf(kEpsilon, predictions.dtype())),
                           ops::ScalarOf(1.0 - kEpsilon, predictions.dtype()));
    logits = ops::Log(p);
  }
  const double ls = LabelSmoothingScope::Current();
  if (ls != 0) return SmoothedCrossentropy(y, logits, ls);
  return ops::SparseSoftmaxCrossEntropyWithLogits(logits, y)[0];
}

Value SparseCategoricalCrossentropy(const Value& labels, const Value& predictions,
                                    bool from_logits) {
  return MeanOverBatch(SparseCategoricalCrossentropyPerExample(labels, predictions, from_logits));
}

Value CategoricalCrossentropyPerExample(const Value& labels, const Value& predictions,
                                        bool from_logits) {
  if (!predictions.ok()) return predictions;
  const TensorShape& s = predictions.shape();
  if (s.unknown_rank() || s.rank() != 2 || s.dim(1) < 1) {
    return Value::Error(InvalidArgumentError(
        "categorical_crossentropy needs [batch, classes] predictions with a known class "
        "count, got " +
        s.ToString()));
  }
  if (from_logits) {
    // One-hot rows: the same sum as the sparse form, which the smoothed form generalizes.
    return SparseCategoricalCrossentropyPerExample(labels, predictions, /*from_logits=*/true);
  }
  Value y = SmoothedOneHot(SqueezeLabels(labels), s.dim(1), LabelSmoothingScope::Current());
  const DType dt = predictions.dtype();
  Value p = ops::Div(predictions, ops::Sum(predictions, {-1}, /*keep_dims=*/true));
  p = ops::Minimum(ops::Maximum(p, ops::ScalarOf(kEpsilon, dt)), ops::ScalarOf(1.0 - kEpsilon, dt));
  return ops::Neg(ops::Sum(ops::Mul(ops::Cast(y, dt), ops::Log(p)), {-1}));
}

Value CategoricalCrossentropy(const Value& labels, const Value& predictions, bool from_logits) {
  return MeanOverBatch(CategoricalCrossentropyPerExample(labels, predictions, from_logits));
}

Value BinaryCrossentropyPerExample(const Value& labels, const Value& predictions,
                                   bool from_logits) {
  if (!predictions.ok()) return predictions;
  const DType dt = predictions.dtype();
  Value y = SameRankTargets(labels, predictions);
  const double ls = LabelSmoothingScope::Current();
  if (ls != 0) {
    y = ops::Add(ops::Mul(y, ops::ScalarOf(1.0 - ls, dt)), ops::ScalarOf(0.5 * ls, dt));
  }
  Value elementwise;
  if (from_logits) {
    // tf.nn.sigmoid_cross_entropy_with_logits: max(z, 0) - z y + log1p(exp(-|z|)) (TF selects
    // where z >= 0; there is no SelectV2 kernel, and max and -|z| are the same values).
    const Value& z = predictions;
    Value relu_logits = ops::Maximum(z, ops::ScalarOf(0.0, dt));
    Value neg_abs_logits = ops::Neg(ops::Abs(z));
    elementwise =
        ops::Add(ops::Sub(relu_logits, ops::Mul(z, y)), ops::Log1p(ops::Exp(neg_abs_logits)));
  } else {
    Value p = ops::Minimum(ops::Maximum(predictions, ops::ScalarOf(kEpsilon, dt)),
                           ops::ScalarOf(1.0 - kEpsilon, dt));
    Value one = ops::ScalarOf(1.0, dt);
    Value bce = ops::Mul(y, ops::Log(p));
    bce = ops::Add(bce, ops::Mul(ops::Sub(one, y), ops::Log(ops::Sub(one, p))));
    elementwise = ops::Neg(bce);
  }
  return ops::Mean(elementwise, {-1});
}

Value BinaryCrossentropy(const Value& labels, const Value& predictions, bool from_logits) {
  return MeanOverBatch(BinaryCrossentropyPerExample(labels, predictions, from_logits));
}

Value MeanSquaredError(const Value& y_true, const Value& y_pred) {
  if (!y_pred.ok()) return y_pred;
  Value y = SameRankTargets(y_true, y_pred);
  return MeanOverBatch(ops::Mean(ops::Square(ops::Sub(y, y_pred)), {-1}));
}

Value MeanAbsoluteError(const Value& y_true, const Value& y_pred) {
  if (!y_pred.ok()) return y_pred;
  Value y = SameRankTargets(y_true, y_pred);
  return MeanOverBatch(ops::Mean(ops::Abs(ops::Sub(y, y_pred)), {-1}));
}

Value Huber(const Value& y_true, const Value& y_pred, double delta) {
  if (!y_pred.ok()) return y_pred;
  const DType dt = y_pred.dtype();
  Value error = ops::Sub(y_pred, SameRankTargets(y_true, y_pred));
  Value abs_error = ops::Abs(error);
  Value d = ops::ScalarOf(delta, dt);
  Value half = ops::ScalarOf(0.5, dt);
  Value quadratic = ops::Mul(half, ops::Square(error));
  Value linear = ops::Sub(ops::Mul(d, abs_error), ops::Mul(half, ops::Square(d)));
  // where(|e| <= delta, quadratic, linear) as a 0/1 mask (there is no SelectV2 kernel; both
  // branches are finite, so the products are the selected values).
  Value near = ops::Cast(ops::LessEqual(abs_error, d), dt);
  Value far = ops::Sub(ops::ScalarOf(1.0, dt), near);
  return MeanOverBatch(ops::Mean(ops::Add(ops::Mul(near, quadratic), ops::Mul(far, linear)), {-1}));
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
