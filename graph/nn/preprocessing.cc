#include "graph/nn/preprocessing.h"

#include <algorithm>

#include "graph/nn/layer_util.h"
#include "graph/ops.h"

namespace troupe::nn {
namespace {

// Keras' convert_to_tensor(inputs, dtype=compute_dtype) for integer images.
Value AsFloat(const Value& x) { return IsFloating(x.dtype()) ? x : ops::Cast(x, DType::kFloat32); }

Value Like(const Tensor& t, const Value& x) {
  Value v(t);
  return x.dtype() == DType::kFloat32 ? v : ops::Cast(v, x.dtype());
}

}  // namespace

Status Rescaling::BuildImpl(const TensorShape& s) {
  for (const Tensor* t : {&scale_, &offset_}) {
    const TensorShape& ts = t->shape();
    bool ok = s.unknown_rank() || ts.rank() <= s.rank();
    for (int i = 1; ok && !s.unknown_rank() && i <= ts.rank(); ++i) {
      const int64_t d = ts.dim(ts.rank() - i), x = s.dim(s.rank() - i);
      ok = d == 1 || x < 0 || d == x;
    }
    if (!ok) {
      return InvalidArgumentError(
          "Rescaling '" + name() + "': " + (t == &scale_ ? "scale" : "offset") + " of shape " +
          ts.ToString() + " does not broadcast against inputs " + s.ToString());
    }
  }
  return Status::OK();
}

Value Rescaling::Call(const Value& in, bool) {
  Value x = AsFloat(in);
  return ops::Add(ops::Mul(x, Like(scale_, x)), Like(offset_, x));
}

Status Normalization::BuildImpl(const TensorShape& s) {
  if (s.unknown_rank())
    return InvalidArgumentError("Normalization '" + name() + "' needs a known rank");
  const int ndim = s.rank();
  std::vector<int64_t> keep;
  for (int64_t a : axis_) {
    TROUPE_ASSIGN_OR_RETURN(int64_t k,
                            internal::NormalizeAxis(a, ndim, "Normalization '" + name() + "'"));
    keep.push_back(k);
  }
  std::sort(keep.begin(), keep.end());
  broadcast_shape_.assign(ndim, 1);
  std::vector<int64_t> kept_dims;
  for (int64_t k : keep) {
    if (s.dim(k) < 0) {
      return InvalidArgumentError("Normalization '" + name() + "': kept axis " + std::to_string(k) +
                                  " of " + s.ToString() + " is unknown");
    }
    broadcast_shape_[k] = s.dim(k);
    kept_dims.push_back(s.dim(k));
  }
  if (mean_) {
    // Align the given dims with the kept axes from the right (Keras' build).
    auto expand = [&](const Tensor& t) -> Result<Tensor> {
      const int r = t.shape().rank();
      if (r > static_cast<int>(keep.size())) {
        return InvalidArgumentError("Normalization '" + name() + "': mean of rank " +
                                    std::to_string(r) + " for " + std::to_string(keep.size()) +
                                    " axes");
      }
      std::vector<int64_t> dims(ndim, 1);
      for (int i = 1; i <= r; ++i) {
        const int64_t d = t.shape().dim(r - i);
        const int64_t k = keep[keep.size() - i];
        if (d != 1 && d != s.dim(k)) {
          return InvalidArgumentError("Normalization '" + name() + "': mean/variance shape " +
                                      t.shape().ToString() + " does not match inputs " +
                                      s.ToString());
        }
        dims[k] = d;
      }
      TROUPE_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
      return t.Reshape(shape);
    };
    TROUPE_ASSIGN_OR_RETURN(mean_b_, expand(*mean_));
    TROUPE_ASSIGN_OR_RETURN(variance_b_, expand(*variance_));
    return Status::OK();
  }
  TROUPE_ASSIGN_OR_RETURN(TensorShape kept, TensorShape::FromDims(kept_dims));
  TROUPE_ASSIGN_OR_RETURN(mean_var_, AddVariable("mean", internal::InitValue(Zeros(), kept),
                                                 /*trainable=*/false));
  TROUPE_ASSIGN_OR_RETURN(variance_var_, AddVariable("variance", internal::InitValue(Ones(), kept),
                                                     /*trainable=*/false));
  TROUPE_ASSIGN_OR_RETURN(
      count_var_, AddVariable("count", internal::InitValue(Zeros(), TensorShape(), DType::kInt64),
                              /*trainable=*/false));
  return Status::OK();
}

Value Normalization::Call(const Value& in, bool) {
  Value x = AsFloat(in);
  Value mean, variance;
  if (mean_) {
    mean = Like(mean_b_, x);
    variance = Like(variance_b_, x);
  } else {
    mean = ops::Reshape(mean_var_.Read(), broadcast_shape_);
    variance = ops::Reshape(variance_var_.Read(), broadcast_shape_);
    if (x.dtype() != DType::kFloat32) {
      mean = ops::Cast(mean, x.dtype());
      variance = ops::Cast(variance, x.dtype());
    }
  }
  Value denom = ops::Maximum(ops::Sqrt(variance), ops::ScalarOf(1e-7, x.dtype()));
  if (invert_) return ops::Add(mean, ops::Mul(x, denom));
  return ops::Div(ops::Sub(x, mean), denom);
}

Status LayerScale::BuildImpl(const TensorShape&) {
  TROUPE_ASSIGN_OR_RETURN(
      gamma_, AddVariable("variable",
                          internal::InitValue(Constant(init_values_), TensorShape{projection_dim_}),
                          trainable_));
  return Status::OK();
}

Value LayerScale::Call(const Value& x, bool) { return ops::Mul(x, Value(gamma_)); }

// ------------------------------------------------------------------- image layers

namespace {

Status NeedImage(const std::string& what, const TensorShape& s) {
  if (s.unknown_rank() || (s.rank() != 3 && s.rank() != 4)) {
    return InvalidArgumentError(what + " expects images of rank 3 or 4, got " + s.ToString());
  }
  return Status::OK();
}

// x reversed along `axis` (a stride -1 StridedSlice over the whole dim).
Value Flip(const Value& x, int axis) {
  const int rank = x.shape().rank();
  std::vector<int64_t> zeros(rank, 0), strides(rank, 1);
  strides[axis] = -1;
  const int64_t all = (int64_t{1} << rank) - 1;
  return ops::StridedSlice(x, zeros, zeros, strides, all, all);
}

// The [batch, 1, 1, 1] (or [1, 1, 1]) shape of one draw per image.
std::vector<int64_t> PerImage(const Value& x) {
  std::vector<int64_t> noise(x.shape().rank(), 1);
  if (noise.size() == 4) noise[0] = -1;
  return noise;
}

}  // namespace

Status CenterCrop::BuildImpl(const TensorShape& s) {
  TROUPE_RETURN_IF_ERROR(NeedImage("CenterCrop '" + name() + "'", s));
  const int h = s.rank() - (channels_first_ ? 2 : 3);
  if (s.dim(h) < 0 || s.dim(h + 1) < 0) {
    return InvalidArgumentError("CenterCrop '" + name() + "' needs known image sizes, got " +
                                s.ToString());
  }
  if (s.dim(h) < height_ || s.dim(h + 1) < width_) {
    return UnimplementedError("CenterCrop '" + name() + "': images " + s.ToString() +
                              " smaller than the crop " + std::to_string(height_) + "x" +
                              std::to_string(width_) +
                              " (Keras resizes them with smart_resize) are not supported");
  }
  return Status::OK();
}

Value CenterCrop::Call(const Value& in, bool) {
  Value x = AsFloat(in);
  const TensorShape& s = x.shape();
  const int h = s.rank() - (channels_first_ ? 2 : 3);
  std::vector<int64_t> begin(s.rank(), 0), size(s.rank(), -1);
  begin[h] = (s.dim(h) - height_) / 2;
  begin[h + 1] = (s.dim(h + 1) - width_) / 2;
  size[h] = height_;
  size[h + 1] = width_;
  return ops::Slice(x, begin, size);
}

Value RandomFlip::Call(const Value& in, bool training) {
  Value x = AsFloat(in);
  if (!training) return x;
  if (Status st = NeedImage("RandomFlip '" + name() + "'", x.shape()); !st.ok()) {
    return Value::Error(st);
  }
  const std::vector<int64_t> noise = PerImage(x);
  Value u = StatelessUniform(NoiseShape(x, noise), NoiseDims(x, noise), Next(), x.dtype());
  // where(flips, flipped, x) as flipped * m + x * (1 - m) with m in {0, 1}: the same values
  // for finite inputs (flipped + 0 or 0 + x) and the same gradients.
  Value m = ops::Cast(ops::LessEqual(u, ops::ScalarOf(0.5, x.dtype())), x.dtype());
  Value keep = ops::Sub(ops::ScalarOf(1.0, x.dtype()), m);
  const int rank = x.shape().rank();
  const int width_axis = channels_first_ ? rank - 1 : rank - 2;
  Value out = x;
  if (horizontal_) out = ops::Add(ops::Mul(Flip(out, width_axis), m), ops::Mul(out, keep));
  if (vertical_) out = ops::Add(ops::Mul(Flip(out, width_axis - 1), m), ops::Mul(out, keep));
  return out;
}

Value RandomContrast::Call(const Value& in, bool training) {
  Value x = AsFloat(in);
  if (!training) return x;
  if (Status st = NeedImage("RandomContrast '" + name() + "'", x.shape()); !st.ok()) {
    return Value::Error(st);
  }
  const std::vector<int64_t> noise = PerImage(x);
  // tf.random.stateless_uniform(minval, maxval) in float32: rnd * (maxval - minval) + minval.
  const float minval = static_cast<float>(1.0 - lower_);
  const float maxval = static_cast<float>(1.0 + upper_);
  const float span = maxval - minval;
  Value u = StatelessUniform(NoiseShape(x, noise), NoiseDims(x, noise), Next(), x.dtype());
  Value factor =
      ops::Add(ops::Mul(u, ops::ScalarOf(span, x.dtype())), ops::ScalarOf(minval, x.dtype()));
  const int64_t rank = x.shape().rank();
  const int64_t width_axis = channels_first_ ? rank - 1 : rank - 2;
  Value mean = ops::Mean(ops::Mean(x, {width_axis - 1}, true), {width_axis}, true);
  Value out = ops::Add(ops::Mul(ops::Sub(x, mean), factor), mean);
  // tf.clip_by_value: minimum(x, max), then maximum(., min).
  return ops::Maximum(ops::Minimum(out, ops::ScalarOf(range_max_, x.dtype())),
                      ops::ScalarOf(range_min_, x.dtype()));
}

Value RandomBrightness::Call(const Value& in, bool training) {
  Value x = AsFloat(in);
  if (!training) return x;
  if (Status st = NeedImage("RandomBrightness '" + name() + "'", x.shape()); !st.ok()) {
    return Value::Error(st);
  }
  const std::vector<int64_t> noise = PerImage(x);
  const float minval = static_cast<float>(lower_);
  const float maxval = static_cast<float>(upper_);
  const float span = maxval - minval;
  Value u = StatelessUniform(NoiseShape(x, noise), NoiseDims(x, noise), Next(), x.dtype());
  Value delta =
      ops::Add(ops::Mul(u, ops::ScalarOf(span, x.dtype())), ops::ScalarOf(minval, x.dtype()));
  delta = ops::Mul(delta, ops::ScalarOf(range_max_ - range_min_, x.dtype()));
  return ops::Maximum(ops::Minimum(ops::Add(x, delta), ops::ScalarOf(range_max_, x.dtype())),
                      ops::ScalarOf(range_min_, x.dtype()));
}

}  // namespace troupe::nn
