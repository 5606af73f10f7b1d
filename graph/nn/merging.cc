#include "graph/nn/merging.h"

#include <string>
#include <utility>

#include "graph/nn/layer_util.h"
#include "graph/ops.h"

namespace troupe::nn {
namespace {

Value Fail(const std::string& msg) { return Value::Error(InvalidArgumentError(msg)); }

// The first error among the inputs, or an ok Value.
Status FirstInputError(const std::vector<Value>& xs) {
  for (const Value& x : xs) {
    if (!x.ok()) return x.status();
  }
  return Status::OK();
}

Value Fold(const char* what, const std::vector<Value>& inputs,
           Value (*op)(const Value&, const Value&)) {
  if (inputs.size() < 2) {
    return Fail(std::string(what) + " needs at least 2 inputs, got " +
                std::to_string(inputs.size()));
  }
  Status s = FirstInputError(inputs);
  if (!s.ok()) return Value::Error(s);
  std::vector<Value> xs = AlignMergeRanks(inputs);
  Value out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) out = op(out, xs[i]);
  return out;
}

// x * min(rsqrt(sum(x^2, axis, keepdims)), 1 / 1e-7) (keras.ops.normalize, order 2).
Value L2Normalize(const Value& x, int64_t axis) {
  Value inv = ops::Rsqrt(ops::Sum(ops::Square(x), {axis}, true));
  inv = ops::Minimum(inv, ops::ScalarOf(1.0 / 1e-7, x.dtype()));
  return x * inv;
}

}  // namespace

std::vector<Value> AlignMergeRanks(const std::vector<Value>& inputs) {
  int max_rank = 0;
  for (const Value& x : inputs) {
    if (!x.ok() || x.shape().unknown_rank()) return inputs;
    max_rank = std::max(max_rank, x.shape().rank());
  }
  std::vector<Value> out;
  for (Value x : inputs) {
    for (int r = x.shape().rank(); r < max_rank; ++r) x = ops::ExpandDims(x, 1);
    out.push_back(x);
  }
  return out;
}

std::pair<Value, Value> MatchScalarDType(const Value& a, const Value& b) {
  if (!a.ok() || !b.ok() || a.dtype() == b.dtype()) return {a, b};
  const bool a_scalar = a.shape().rank() == 0, b_scalar = b.shape().rank() == 0;
  if (a_scalar && !b_scalar && IsFloating(a.dtype()) && IsFloating(b.dtype())) {
    return {ops::Cast(a, b.dtype()), b};
  }
  if (b_scalar && !a_scalar && IsFloating(a.dtype()) && IsFloating(b.dtype())) {
    return {a, ops::Cast(b, a.dtype())};
  }
  return {a, b};
}

Value MultiplyAll(const std::vector<Value>& inputs) { return Fold("Multiply", inputs, ops::Mul); }
Value MaximumAll(const std::vector<Value>& inputs) { return Fold("Maximum", inputs, ops::Maximum); }
Value MinimumAll(const std::vector<Value>& inputs) { return Fold("Minimum", inputs, ops::Minimum); }

Value AverageAll(const std::vector<Value>& inputs) {
  Value sum = Fold("Average", inputs, ops::Add);
  if (!sum.ok()) return sum;
  return sum / static_cast<double>(inputs.size());
}

Value SubtractPair(const std::vector<Value>& inputs) {
  if (inputs.size() != 2) {
    return Fail("Subtract takes exactly 2 inputs, got " + std::to_string(inputs.size()));
  }
  return Fold("Subtract", inputs, ops::Sub);
}

Value DotPair(const std::vector<Value>& inputs, int64_t axis_x, int64_t axis_y, bool normalize) {
  if (inputs.size() != 2) {
    return Fail("Dot takes exactly 2 inputs, got " + std::to_string(inputs.size()));
  }
  Status st = FirstInputError(inputs);
  if (!st.ok()) return Value::Error(st);
  Value x = inputs[0], y = inputs[1];
  const TensorShape xs = x.shape(), ys = y.shape();
  if (xs.unknown_rank() || ys.unknown_rank() || xs.rank() < 2 || ys.rank() < 2) {
    return Fail("Dot needs inputs of known rank >= 2, got " + xs.ToString() + " and " +
                ys.ToString());
  }
  int x_ndim = xs.rank(), y_ndim = ys.rank();
  // Keras' Dot: a negative axis is taken modulo each input's rank.
  int64_t a0 = axis_x < 0 ? ((axis_x % x_ndim) + x_ndim) % x_ndim : axis_x;
  int64_t a1 = axis_y < 0 ? ((axis_y % y_ndim) + y_ndim) % y_ndim : axis_y;
  if (a0 >= x_ndim || a1 >= y_ndim) {
    return Fail("Dot axes (" + std::to_string(axis_x) + ", " + std::to_string(axis_y) +
                ") out of range for inputs " + xs.ToString() + " and " + ys.ToString());
  }
  if (a0 == 0 || a1 == 0) return Fail("Dot cannot reduce over axis 0 (the batch axis)");
  if (xs.dim(a0) >= 0 && ys.dim(a1) >= 0 && xs.dim(a0) != ys.dim(a1)) {
    return Fail("Dot: x.shape[" + std::to_string(a0) + "] != y.shape[" + std::to_string(a1) +
                "] for inputs " + xs.ToString() + " and " + ys.ToString());
  }
  for (int i = 1; i < x_ndim; ++i) {
    if (xs.dim(i) < 0) return Fail("Dot needs known non-batch dims, got " + xs.ToString());
  }
  for (int i = 1; i < y_ndim; ++i) {
    if (ys.dim(i) < 0) return Fail("Dot needs known non-batch dims, got " + ys.ToString());
  }
  if (normalize) {
    x = L2Normalize(x, a0);
    y = L2Normalize(y, a1);
  }
  const int orig_x_ndim = x_ndim, orig_y_ndim = y_ndim;
  if (x_ndim == 2) {
    x = ops::ExpandDims(x, 1);
    a0 += 1;
    x_ndim += 1;
  }
  if (y_ndim == 2) {
    y = ops::ExpandDims(y, 2);
    y_ndim += 1;
  }
  if (a0 != x_ndim - 1) {
    std::vector<int64_t> pattern;
    for (int i = 0; i < x_ndim; ++i) pattern.push_back(i);
    for (int64_t i = a0; i < x_ndim - 1; ++i) pattern[i] = pattern[i + 1];
    pattern.back() = a0;
    x = ops::Transpose(x, pattern);
  }
  if (a1 != 1) {
    std::vector<int64_t> pattern;
    for (int i = 0; i < y_ndim; ++i) pattern.push_back(i);
    for (int64_t i = a1; i > 1; --i) pattern[i] = pattern[i - 1];
    pattern[1] = a1;
    y = ops::Transpose(y, pattern);
  }
  const TensorShape xt = x.shape(), yt = y.shape();
  const int64_t batch = xt.dim(0) >= 0 ? xt.dim(0) : -1;
  std::vector<int64_t> x_mid, y_trail;
  if (x_ndim > 3) {
    int64_t prod = 1;
    for (int i = 1; i < x_ndim - 1; ++i) {
      x_mid.push_back(xt.dim(i));
      prod *= xt.dim(i);
    }
    x = ops::Reshape(x, {batch, prod, xt.dim(x_ndim - 1)});
  }
  if (y_ndim > 3) {
    int64_t prod = 1;
    for (int i = 2; i < y_ndim; ++i) {
      y_trail.push_back(yt.dim(i));
      prod *= yt.dim(i);
    }
    y = ops::Reshape(y, {yt.dim(0) >= 0 ? yt.dim(0) : -1, yt.dim(1), prod});
  }
  Value result = ops::BatchMatMul(x, y);
  if (!x_mid.empty() || !y_trail.empty()) {
    const TensorShape rs = result.shape();
    std::vector<int64_t> shape = {batch};
    if (!x_mid.empty()) {
      shape.insert(shape.end(), x_mid.begin(), x_mid.end());
    } else {
      shape.push_back(rs.dim(1));
    }
    if (!y_trail.empty()) {
      shape.insert(shape.end(), y_trail.begin(), y_trail.end());
    } else {
      shape.push_back(rs.dim(2));
    }
    result = ops::Reshape(result, shape);
  }
  if (orig_x_ndim == 2) {
    result = ops::Squeeze(result, {1});
  } else if (orig_y_ndim == 2) {
    result = ops::Squeeze(result, {result.shape().rank() - 1});
  }
  return result;
}

Value NumpyBinary(BinaryOp op, const std::vector<Value>& inputs) {
  if (inputs.size() != 2) {
    return Fail("a binary op-layer takes exactly 2 operands, got " + std::to_string(inputs.size()));
  }
  auto [a, b] = MatchScalarDType(inputs[0], inputs[1]);
  switch (op) {
    case BinaryOp::kAdd:
      return ops::Add(a, b);
    case BinaryOp::kMul:
      return ops::Mul(a, b);
    case BinaryOp::kSub:
      return ops::Sub(a, b);
    case BinaryOp::kDiv:
      return ops::Div(a, b);
    case BinaryOp::kMax:
      return ops::Maximum(a, b);
    case BinaryOp::kMin:
      return ops::Minimum(a, b);
  }
  return Fail("unknown binary op");
}

}  // namespace troupe::nn
