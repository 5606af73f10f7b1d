#include "graph/nn/augment.h"

#include <vector>

#include "graph/ops.h"

namespace troupe::nn {
namespace {

// tf.random.stateless_uniform(minval, maxval) in float32: rnd * (maxval - minval) + minval.
Value Uniform(const Value& u, double lower, double upper) {
  const float minval = static_cast<float>(lower);
  const float maxval = static_cast<float>(upper);
  const float span = maxval - minval;
  return ops::Add(ops::Mul(u, ops::ScalarOf(span, DType::kFloat32)),
                  ops::ScalarOf(minval, DType::kFloat32));
}

}  // namespace

Value RandomAffine::Call(const Value& in, bool training) {
  Value x = IsFloating(in.dtype()) ? in : ops::Cast(in, DType::kFloat32);
  if (!training) return x;
  const char* what = kind_ == Kind::kRotation ? "RandomRotation"
                     : kind_ == Kind::kZoom   ? "RandomZoom"
                                              : "RandomTranslation";
  auto fail = [&](const std::string& why) {
    return Value::Error(UnimplementedError(std::string(what) + " '" + name() + "': " + why));
  };
  const TensorShape& s = x.shape();
  if (s.unknown_rank() || (s.rank() != 3 && s.rank() != 4)) {
    return fail("expects images of rank 3 or 4, got " + s.ToString());
  }
  if (x.dtype() != DType::kFloat32) {
    return fail("supports float32 images only, got " + std::string(DTypeName(x.dtype())));
  }
  const bool unbatched = s.rank() == 3;
  // NHWC with a batch dim.
  Value x4 = unbatched ? ops::Reshape(x, {1, s.dim(0), s.dim(1), s.dim(2)}) : x;
  if (fill_.channels_first) x4 = ops::Transpose(x4, {0, 2, 3, 1});
  const TensorShape& s4 = x4.shape();
  const int64_t height = s4.dim(1), width = s4.dim(2);
  if (height < 0 || width < 0 || s4.dim(3) < 0) {
    return fail("needs known image sizes, got " + s.ToString());
  }
  // One draw per image: [batch, 1] (the draw's values depend only on its size).
  const std::vector<int64_t> per_image = {-1, 1, 1, 1};
  auto draw = [&]() {
    Value u = StatelessUniform(NoiseShape(x4, per_image), NoiseDims(x4, per_image), Next(),
                               DType::kFloat32);
    return ops::Reshape(u, {-1, 1});
  };
  const DType f32 = DType::kFloat32;
  Value transform;
  if (kind_ == Kind::kRotation) {
    Value angle = ops::Reshape(Uniform(draw(), height_lower_ * 360.0, height_upper_ * 360.0), {-1});
    transform = Apply1("RotationTransform", {angle}, AttrMap{{"height", height}, {"width", width}});
  } else if (kind_ == Kind::kZoom) {
    Value hz = Uniform(draw(), 1.0 + height_lower_, 1.0 + height_upper_);
    Value wz = width_ ? Uniform(draw(), 1.0 + width_->first, 1.0 + width_->second) : hz;
    const float cx = (static_cast<float>(width) - 1.0f) / 2.0f;
    const float cy = (static_cast<float>(height) - 1.0f) / 2.0f;
    Value one = ops::ScalarOf(1.0, f32);
    Value x_offset = ops::Mul(ops::ScalarOf(cx, f32), ops::Sub(one, wz));
    Value y_offset = ops::Mul(ops::ScalarOf(cy, f32), ops::Sub(one, hz));
    Value zero = ops::ZerosLike(hz);
    transform = ops::Concat({wz, zero, x_offset, zero, hz, y_offset, zero, zero}, 1);
  } else {
    Value th = ops::Mul(Uniform(draw(), height_lower_, height_upper_),
                        ops::ScalarOf(static_cast<double>(height), f32));
    Value tw = ops::Mul(Uniform(draw(), width_->first, width_->second),
                        ops::ScalarOf(static_cast<double>(width), f32));
    Value zero = ops::ZerosLike(th);
    Value one = ops::OnesLike(th);
    transform = ops::Concat({one, zero, ops::Neg(tw), zero, one, ops::Neg(th), zero, zero}, 1);
  }
  Value out = Apply1("ImageProjectiveTransform", {x4, transform},
                     AttrMap{{"interpolation", fill_.interpolation},
                             {"fill_mode", fill_.fill_mode},
                             {"fill_value", fill_.fill_value},
                             {"invert", false}});
  if (fill_.channels_first) out = ops::Transpose(out, {0, 3, 1, 2});
  if (unbatched) out = ops::Reshape(out, s.dims());
  return out;
}

}  // namespace troupe::nn
