#include "graph/nn/reshaping.h"

#include <algorithm>
#include <cmath>

#include "graph/nn/layer_util.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/tracing_device.h"

namespace troupe::nn {

Value Reshape::Call(const Value& x, bool) {
  const TensorShape& s = x.shape();
  std::vector<int64_t> target = target_;
  int unknown = 0;
  for (int64_t d : target) unknown += d == -1;
  if (unknown > 1) {
    return Value::Error(
        InvalidArgumentError("Reshape '" + name() + "': target_shape may hold at most one -1"));
  }
  if (unknown == 1) {
    // Resolve the -1 from the static non-batch dims so the batch dim can stay -1.
    int64_t total = 1;
    for (int i = 1; i < s.rank(); ++i) {
      if (s.dim(i) < 0) {
        return Value::Error(
            InvalidArgumentError("Reshape '" + name() +
                                 "' with a -1 in target_shape needs known non-batch input "
                                 "dims, got " +
                                 s.ToString()));
      }
      total *= s.dim(i);
    }
    int64_t known = 1;
    for (int64_t d : target) known *= d == -1 ? 1 : d;
    if (known == 0 || total % known != 0) {
      return Value::Error(InvalidArgumentError("Reshape '" + name() + "': input " + s.ToString() +
                                               " does not fit target_shape"));
    }
    for (int64_t& d : target) d = d == -1 ? total / known : d;
  }
  target.insert(target.begin(), s.unknown_rank() || s.rank() < 1 ? -1 : s.dim(0));
  return ops::Reshape(x, target);
}

Value ZeroPadding2D::Call(const Value& x, bool) {
  if (x.shape().rank() != 4) {
    return Value::Error(InvalidArgumentError("ZeroPadding2D '" + name() +
                                             "' expects NHWC inputs of rank 4, got " +
                                             x.shape().ToString()));
  }
  return ops::Pad(x, {0, 0, pads_[0], pads_[1], pads_[2], pads_[3], 0, 0});
}

Value GlobalPooling::Call(const Value& x, bool) {
  // Keras keeps ops.mean in float32 (its output is cast to the compute dtype).
  return KeepFloat32([&]() -> Value {
    if (x.shape().rank() != spatial_rank_ + 2) {
      return Value::Error(InvalidArgumentError(
          "global pooling layer '" + name() + "' expects inputs of rank " +
          std::to_string(spatial_rank_ + 2) + " (channels last), got " + x.shape().ToString()));
    }
    std::vector<int64_t> axes;
    for (int i = 1; i <= spatial_rank_; ++i) axes.push_back(i);
    return kind_ == Kind::kAvg ? ops::Mean(x, axes, keepdims_) : ops::Max(x, axes, keepdims_);
  });
}

Value AddAll(const std::vector<Value>& inputs) {
  if (inputs.size() < 2) {
    return Value::Error(
        InvalidArgumentError("Add needs at least 2 inputs, got " + std::to_string(inputs.size())));
  }
  Value sum = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) sum = ops::Add(sum, inputs[i]);
  return sum;
}

Value AddAllRelu(const std::vector<Value>& inputs) {
  if (inputs.size() == 2 && inputs[0].ok() && inputs[1].ok() &&
      inputs[0].dtype() == DType::kFloat32 && inputs[1].dtype() == DType::kFloat32 &&
      inputs[0].shape().IsFullyDefined() && inputs[0].shape() == inputs[1].shape() &&
      UseCpuFusedOps()) {
    return Apply1("AddRelu", {inputs[0], inputs[1]}, {}, "AddRelu");
  }
  return ops::Relu(AddAll(inputs));
}

Value ConcatenateAll(const std::vector<Value>& inputs, int64_t axis) {
  if (inputs.size() < 2) {
    return Value::Error(InvalidArgumentError("Concatenate needs at least 2 inputs, got " +
                                             std::to_string(inputs.size())));
  }
  Result<int64_t> a = internal::NormalizeAxis(axis, inputs[0].shape().rank(), "Concatenate");
  if (!a.ok()) return Value::Error(a.status());
  return ops::Concat(inputs, *a);
}

namespace {

Value Fail(const std::string& msg) { return Value::Error(InvalidArgumentError(msg)); }

// Checks x's rank is spatial + 2 with known non-batch dims.
Status CheckSpatial(const Value& x, size_t spatial, const std::string& what) {
  if (!x.ok()) return x.status();
  const TensorShape& s = x.shape();
  if (s.unknown_rank() || s.rank() != static_cast<int>(spatial) + 2) {
    return InvalidArgumentError(what + " expects channels-last inputs of rank " +
                                std::to_string(spatial + 2) + ", got " + s.ToString());
  }
  for (int i = 1; i < s.rank(); ++i) {
    if (s.dim(i) < 0) {
      return InvalidArgumentError(what + " needs known non-batch dims, got " + s.ToString());
    }
  }
  return Status::OK();
}

// x's dims with the batch dim as -1 when unknown.
std::vector<int64_t> DimsOf(const Value& x) {
  std::vector<int64_t> d;
  for (int i = 0; i < x.shape().rank(); ++i) {
    d.push_back(x.shape().dim(i) < 0 ? -1 : x.shape().dim(i));
  }
  return d;
}

}  // namespace

Value CropSpatial(const Value& x, const std::vector<int64_t>& crops, const std::string& what) {
  const size_t n = crops.size() / 2;
  Status st = CheckSpatial(x, n, what);
  if (!st.ok()) return Value::Error(st);
  std::vector<int64_t> begin = {0}, size = {-1};
  for (size_t i = 0; i < n; ++i) {
    const int64_t dim = x.shape().dim(static_cast<int>(i) + 1);
    const int64_t keep = dim - crops[2 * i] - crops[2 * i + 1];
    if (crops[2 * i] < 0 || crops[2 * i + 1] < 0 || keep <= 0) {
      return Fail(what + ": cropping " + std::to_string(crops[2 * i]) + ", " +
                  std::to_string(crops[2 * i + 1]) + " leaves nothing of axis " +
                  std::to_string(i + 1) + " of input " + x.shape().ToString());
    }
    begin.push_back(crops[2 * i]);
    size.push_back(keep);
  }
  begin.push_back(0);
  size.push_back(-1);
  return ops::Slice(x, begin, size);
}

Value ZeroPadSpatial(const Value& x, const std::vector<int64_t>& pads, const std::string& what) {
  const size_t n = pads.size() / 2;
  if (!x.ok()) return x;
  if (x.shape().unknown_rank() || x.shape().rank() != static_cast<int>(n) + 2) {
    return Fail(what + " expects channels-last inputs of rank " + std::to_string(n + 2) + ", got " +
                x.shape().ToString());
  }
  std::vector<int64_t> p = {0, 0};
  p.insert(p.end(), pads.begin(), pads.end());
  p.push_back(0);
  p.push_back(0);
  return ops::Pad(x, p);
}

Value RepeatAxis(const Value& x, int64_t axis, int64_t n) {
  if (!x.ok() || n == 1) return x;
  std::vector<int64_t> dims = DimsOf(x);
  std::vector<Value> copies(static_cast<size_t>(n), x);
  Value stacked = ops::Stack(copies, axis + 1);
  dims[axis] = dims[axis] < 0 ? -1 : dims[axis] * n;
  return ops::Reshape(stacked, dims);
}

Value UpSampleNearest(const Value& x, const std::vector<int64_t>& sizes, const std::string& what) {
  Status st = CheckSpatial(x, sizes.size(), what);
  if (!st.ok()) return Value::Error(st);
  Value y = x;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 0) return Fail(what + ": size must be positive");
    y = RepeatAxis(y, static_cast<int64_t>(i) + 1, sizes[i]);
  }
  return y;
}

Value PermuteDims(const Value& x, const std::vector<int64_t>& dims) {
  if (!x.ok()) return x;
  if (x.shape().unknown_rank() || x.shape().rank() != static_cast<int>(dims.size()) + 1) {
    return Fail("Permute with dims of length " + std::to_string(dims.size()) +
                " expects inputs of rank " + std::to_string(dims.size() + 1) + ", got " +
                x.shape().ToString());
  }
  std::vector<int64_t> perm = {0};
  std::vector<bool> seen(dims.size() + 1, false);
  for (int64_t d : dims) {
    if (d < 1 || d > static_cast<int64_t>(dims.size()) || seen[d]) {
      return Fail("Permute dims must be a permutation of 1.." + std::to_string(dims.size()));
    }
    seen[d] = true;
    perm.push_back(d);
  }
  return ops::Transpose(x, perm);
}

Value RepeatVectorOf(const Value& x, int64_t n) {
  if (!x.ok()) return x;
  if (x.shape().unknown_rank() || x.shape().rank() != 2) {
    return Fail("RepeatVector expects inputs of rank 2, got " + x.shape().ToString());
  }
  return RepeatAxis(ops::ExpandDims(x, 1), 1, n);
}

Value PoolSpatial(const Value& x, bool is_max, const std::vector<int64_t>& pool,
                  const std::vector<int64_t>& strides, const std::string& padding,
                  const std::string& what) {
  Status st = CheckSpatial(x, pool.size(), what);
  if (!st.ok()) return Value::Error(st);
  auto pool2d = [&](const Value& v, int64_t kh, int64_t kw, int64_t sh, int64_t sw) {
    std::vector<int64_t> k = {1, kh, kw, 1}, s = {1, sh, sw, 1};
    return is_max ? ops::MaxPool(v, k, s, padding) : ops::AvgPool(v, k, s, padding);
  };
  const std::vector<int64_t> d = DimsOf(x);
  if (pool.size() == 1) {
    Value y = pool2d(ops::ExpandDims(x, 2), pool[0], 1, strides[0], 1);
    return ops::Squeeze(y, {2});
  }
  if (pool.size() == 2) return pool2d(x, pool[0], pool[1], strides[0], strides[1]);
  if (pool.size() != 3) return Fail(what + ": pooling over 1, 2 or 3 axes");
  auto pool3d = [&](const Value& v) -> Value {
    // Depth window first, over [B, D, H*W, C].
    Value y = pool2d(ops::Reshape(v, {d[0], d[1], d[2] * d[3], d[4]}), pool[0], 1, strides[0], 1);
    if (!y.ok()) return y;
    const int64_t depth = y.shape().dim(1);
    y = pool2d(ops::Reshape(y, {d[0] < 0 ? -1 : d[0] * depth, d[2], d[3], d[4]}), pool[1], pool[2],
               strides[1], strides[2]);
    if (!y.ok()) return y;
    return ops::Reshape(y, {d[0], depth, y.shape().dim(1), y.shape().dim(2), d[4]});
  };
  if (is_max) return pool3d(x);  // exact: no rounding between the two stages
  // Under a mixed policy the average is one rounding of the float32 result of the rounded
  // input, as one AvgPool3D op, not a rounding after each stage.
  Value xr = RoundTo(x, CurrentComputeDType());
  return KeepFloat32([&] { return pool3d(xr); });
}

namespace {

// One output axis of a half-pixel bilinear resize (TF's compute_interpolation_weights).
struct AxisLerp {
  std::vector<int32_t> lower, upper;
  std::vector<float> lerp;
};
AxisLerp BilinearAxis(int64_t in, int64_t out) {
  AxisLerp a;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    const float pos = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float lo = std::floor(pos);
    a.lower.push_back(static_cast<int32_t>(std::max<int64_t>(static_cast<int64_t>(lo), 0)));
    a.upper.push_back(
        static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::ceil(pos)), in - 1)));
    a.lerp.push_back(pos - lo);
  }
  return a;
}
std::vector<int32_t> NearestAxis(int64_t in, int64_t out) {
  std::vector<int32_t> idx;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    int64_t j = static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale));
    idx.push_back(static_cast<int32_t>(std::max<int64_t>(std::min(j, in - 1), 0)));
  }
  return idx;
}
Value IndexConst(const std::vector<int32_t>& v) { return ops::Const(Tensor::FromVector(v)); }
Value LerpConst(const std::vector<float>& v) {
  Result<Tensor> t = Tensor::FromVector(v, TensorShape{static_cast<int64_t>(v.size()), 1, 1, 1});
  if (!t.ok()) return Value::Error(t.status());
  return ops::Const(*t);
}

Value BilinearFloat32(const Value& x, int64_t h, int64_t w, int64_t height, int64_t width) {
  Value xf = x.dtype() == DType::kFloat32 ? x : ops::Cast(x, DType::kFloat32);
  const AxisLerp ax = BilinearAxis(w, width), ay = BilinearAxis(h, height);
  Value xw = ops::Transpose(xf, {2, 0, 1, 3});
  Value left = ops::Gather(xw, IndexConst(ax.lower));
  Value right = ops::Gather(xw, IndexConst(ax.upper));
  Value rows = ops::Transpose(left + (right - left) * LerpConst(ax.lerp), {2, 1, 0, 3});
  Value top = ops::Gather(rows, IndexConst(ay.lower));
  Value bottom = ops::Gather(rows, IndexConst(ay.upper));
  Value y = ops::Transpose(top + (bottom - top) * LerpConst(ay.lerp), {1, 0, 2, 3});
  return x.dtype() == DType::kFloat32 ? y : ops::Cast(y, x.dtype());
}

}  // namespace

Value ResizeImages(const Value& x, int64_t height, int64_t width, const std::string& method,
                   const std::string& what) {
  Status st = CheckSpatial(x, 2, what);
  if (!st.ok()) return Value::Error(st);
  if (height <= 0 || width <= 0) return Fail(what + ": the output size must be positive");
  if (!IsFloating(x.dtype())) {
    return Fail(what + " resizes float images, got " + std::string(DTypeName(x.dtype())));
  }
  const int64_t h = x.shape().dim(1), w = x.shape().dim(2);
  // Axes are brought to the front for Gather: [W, N, H, C], then [H, N, ow, C].
  if (method == "nearest") {
    Value y = ops::Gather(ops::Transpose(x, {2, 0, 1, 3}), IndexConst(NearestAxis(w, width)));
    y = ops::Gather(ops::Transpose(y, {2, 1, 0, 3}), IndexConst(NearestAxis(h, height)));
    return ops::Transpose(y, {1, 0, 2, 3});
  }
  if (method != "bilinear") return Fail(what + ": unknown interpolation " + method);
  // TF's ResizeBilinear computes in float32 from the (rounded) input; ops.image.resize casts
  // the result back to the input's dtype (one rounding under a mixed policy).
  Value xr = RoundTo(x, CurrentComputeDType());
  return KeepFloat32([&] { return BilinearFloat32(xr, h, w, height, width); });
}

}  // namespace troupe::nn
