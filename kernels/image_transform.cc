// Projective image transforms (CPU, float32, NHWC), as TF's ImageProjectiveTransformV3:
//   ImageProjectiveTransform(images [B,H,W,C], transforms [B or 1, 8]) -> [B,H,W,C]
//     attrs: interpolation "NEAREST" | "BILINEAR", fill_mode "REFLECT" | "WRAP" | "CONSTANT" |
//     "NEAREST", fill_value (float), invert (bool, default false).
//     Output pixel (x, y) reads the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
//     k = c0 x + c1 y + 1 (k == 0: fill_value), coordinates mapped by fill_mode and read with
//     nearest (std::round) or bilinear interpolation, out-of-image reads giving fill_value:
//     TF's ProjectiveGenerator arithmetic, one float op at a time. With `invert` each transform
//     is first replaced by its inverse (3x3 with a trailing 1, inverted, divided by its last
//     entry) as TF's gradient of ImageProjectiveTransformV3 does: the gradient w.r.t. the
//     images is ImageProjectiveTransform(dy, transforms, invert = !invert, fill_value = 0).
//   RotationTransform(angle [B] degrees) -> [B,8], attrs height, width: Keras'
//     _compute_affine_matrix for a rotation about the image center (float32 op by op).
// Every output element depends only on its inputs: deterministic for any thread count.
// Compiled with -ffp-contract=off (each product rounded on its own, as TF's kernel).
#include <Eigen/Core>
#include <Eigen/LU>
#include <cmath>
#include <string>

#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

enum class Interp { kNearest, kBilinear };
enum class Fill { kReflect, kWrap, kConstant, kNearest };

struct TransformAttrs {
  Interp interp;
  Fill fill;
  float fill_value;
  bool invert;
};

Result<TransformAttrs> ReadAttrs(const AttrMap& attrs) {
  constexpr const char* kOp = "ImageProjectiveTransform";
  TransformAttrs a{};
  TROUPE_ASSIGN_OR_RETURN(std::string interp, attrs.GetString("interpolation"));
  if (interp == "NEAREST") {
    a.interp = Interp::kNearest;
  } else if (interp == "BILINEAR") {
    a.interp = Interp::kBilinear;
  } else {
    return OpError(kOp, "'interpolation' must be NEAREST or BILINEAR, not " + interp);
  }
  TROUPE_ASSIGN_OR_RETURN(std::string fill, attrs.GetString("fill_mode"));
  if (fill == "REFLECT") {
    a.fill = Fill::kReflect;
  } else if (fill == "WRAP") {
    a.fill = Fill::kWrap;
  } else if (fill == "CONSTANT") {
    a.fill = Fill::kConstant;
  } else if (fill == "NEAREST") {
    a.fill = Fill::kNearest;
  } else {
    return OpError(kOp, "'fill_mode' must be REFLECT, WRAP, CONSTANT or NEAREST, not " + fill);
  }
  TROUPE_ASSIGN_OR_RETURN(double fv, attrs.GetFloat("fill_value"));
  a.fill_value = static_cast<float>(fv);
  TROUPE_ASSIGN_OR_RETURN(a.invert, attrs.GetBoolOr("invert", false));
  return a;
}

Result<SpecList> TransformShape(Specs in, const AttrMap& attrs) {
  constexpr const char* kOp = "ImageProjectiveTransform";
  TROUPE_RETURN_IF_ERROR(ReadAttrs(attrs).status());
  if (in[0].dtype != DType::kFloat32 || in[1].dtype != DType::kFloat32) {
    return OpError(kOp, "'images' and 'transforms' must be float32");
  }
  if (!in[0].shape.unknown_rank() && in[0].shape.rank() != 4) {
    return OpError(kOp, "'images' must be rank 4, got " + in[0].shape.ToString());
  }
  if (!in[1].shape.unknown_rank() &&
      (in[1].shape.rank() != 2 || (in[1].shape.dim(1) >= 0 && in[1].shape.dim(1) != 8))) {
    return OpError(kOp, "'transforms' must be [N, 8], got " + in[1].shape.ToString());
  }
  return SpecList{TensorSpec{in[0].shape, DType::kFloat32, ""}};
}

// TF's MapCoordinate<Mode>.
inline float MapCoord(Fill fill, float out_coord, int64_t len) {
  const float hi = static_cast<float>(len - 1);
  auto clamp = [hi](float v) { return v < 0.0f ? 0.0f : (v > hi ? hi : v); };
  float in = out_coord;
  switch (fill) {
    case Fill::kReflect:
      if (in < 0) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz2 = 2 * len;
          if (in < sz2) in = static_cast<float>(sz2 * static_cast<int64_t>(-in / sz2)) + in;
          in = (in < -len) ? in + sz2 : -in - 1;
        }
      } else if (in > len - 1) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz2 = 2 * len;
          in -= static_cast<float>(sz2 * static_cast<int64_t>(in / sz2));
          if (in >= len) in = sz2 - in - 1;
        }
      }
      return clamp(in);
    case Fill::kWrap:
      if (in < 0) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz = len - 1;
          in += static_cast<float>(len * (static_cast<int64_t>(-in / sz) + 1));
        }
      } else if (in > len - 1) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz = len - 1;
          in -= static_cast<float>(len * static_cast<int64_t>(in / sz));
        }
      }
      return clamp(in);
    case Fill::kConstant:
      return in;
    case Fill::kNearest:
      return clamp(in);
  }
  return in;
}

// The 8 coefficients of the inverse of [[t0 t1 t2] [t3 t4 t5] [t6 t7 1]], divided by its last
// entry, as TF computes them: matrix_inverse (Eigen's float PartialPivLU of a dynamic row-major
// matrix, then inverse()), then matrices_to_flat_transforms' float division.
void Invert(const float* t, float* out) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Matrix m(3, 3);
  m << t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], 1.0f;
  Eigen::PartialPivLU<Matrix> lu(m);
  const Matrix inv = lu.inverse();
  const float last = inv(2, 2);
  for (int i = 0; i < 8; ++i) out[i] = inv(i / 3, i % 3) / last;
}

Status TransformForward(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList specs, TransformShape(InputSpecs(ctx), ctx.attrs()));
  TROUPE_ASSIGN_OR_RETURN(TransformAttrs a, ReadAttrs(ctx.attrs()));
  const Tensor& images = ctx.input(0);
  const Tensor& transforms = ctx.input(1);
  const int64_t batch = images.shape().dim(0), height = images.shape().dim(1),
                width = images.shape().dim(2), channels = images.shape().dim(3);
  const int64_t nt = transforms.shape().dim(0);
  if (nt != 1 && nt != batch) {
    return OpError("ImageProjectiveTransform", "'transforms' has " + std::to_string(nt) +
                                                   " rows for a batch of " + std::to_string(batch));
  }
  std::vector<float> t(transforms.data<float>(), transforms.data<float>() + nt * 8);
  if (a.invert) {
    for (int64_t i = 0; i < nt; ++i) {
      float inv[8];
      Invert(&t[i * 8], inv);
      std::copy(inv, inv + 8, &t[i * 8]);
    }
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(0, DType::kFloat32, images.shape()));
  const float* in = images.data<float>();
  float* o = out.data<float>();
  const float fill_value = a.fill_value;
  // One unit = one output row (b, y).
  ParallelFor(ctx.pool(), batch * height, width * channels * 12, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / height, oy = row % height;
      const float* tr = &t[(nt == 1 ? 0 : b) * 8];
      const float* img = in + b * height * width * channels;
      auto read = [&](float yf, float xf, int64_t c) -> float {
        if (0 <= yf && yf < height && 0 <= xf && xf < width) {
          return img[(static_cast<int64_t>(yf) * width + static_cast<int64_t>(xf)) * channels + c];
        }
        return fill_value;
      };
      for (int64_t ox = 0; ox < width; ++ox) {
        float* dst = o + ((b * height + oy) * width + ox) * channels;
        const float fx = static_cast<float>(ox), fy = static_cast<float>(oy);
        const float projection = tr[6] * fx + tr[7] * fy + 1.f;
        if (projection == 0) {
          for (int64_t c = 0; c < channels; ++c) dst[c] = fill_value;
          continue;
        }
        const float input_x = (tr[0] * fx + tr[1] * fy + tr[2]) / projection;
        const float input_y = (tr[3] * fx + tr[4] * fy + tr[5]) / projection;
        const float x = MapCoord(a.fill, input_x, width);
        const float y = MapCoord(a.fill, input_y, height);
        if (a.interp == Interp::kNearest) {
          const float ry = std::round(y), rx = std::round(x);
          for (int64_t c = 0; c < channels; ++c) dst[c] = read(ry, rx, c);
          continue;
        }
        const float y_floor = std::floor(y), x_floor = std::floor(x);
        const float y_ceil = y_floor + 1, x_ceil = x_floor + 1;
        for (int64_t c = 0; c < channels; ++c) {
          const float value_yfloor =
              (x_ceil - x) * read(y_floor, x_floor, c) + (x - x_floor) * read(y_floor, x_ceil, c);
          const float value_yceil =
              (x_ceil - x) * read(y_ceil, x_floor, c) + (x - x_floor) * read(y_ceil, x_ceil, c);
          dst[c] = (y_ceil - y) * value_yfloor + (y - y_floor) * value_yceil;
        }
      }
    }
  });
  (void)specs;
  return Status::OK();
}

Result<SpecList> RotationShape(Specs in, const AttrMap& attrs) {
  constexpr const char* kOp = "RotationTransform";
  TROUPE_RETURN_IF_ERROR(attrs.GetInt("height").status());
  TROUPE_RETURN_IF_ERROR(attrs.GetInt("width").status());
  if (in[0].dtype != DType::kFloat32) return OpError(kOp, "'angle' must be float32");
  if (!in[0].shape.unknown_rank() && in[0].shape.rank() != 1) {
    return OpError(kOp, "'angle' must be rank 1, got " + in[0].shape.ToString());
  }
  const int64_t n = in[0].shape.unknown_rank() ? -1 : in[0].shape.dim(0);
  return SpecList{TensorSpec{TensorShape{n, 8}, DType::kFloat32, ""}};
}

Status RotationForward(KernelContext& ctx) {
  TROUPE_RETURN_IF_ERROR(RotationShape(InputSpecs(ctx), ctx.attrs()).status());
  const int64_t height = *ctx.attrs().GetInt("height"), width = *ctx.attrs().GetInt("width");
  const Tensor& angle = ctx.input(0);
  const int64_t n = angle.shape().dim(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(0, DType::kFloat32, TensorShape{n, 8}));
  const float* ap = angle.data<float>();
  float* o = out.data<float>();
  const float deg = static_cast<float>(M_PI / 180.0);
  const float cx = 0.5f * (static_cast<float>(width) - 1.0f);
  const float cy = 0.5f * (static_cast<float>(height) - 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float rad = ap[i] * deg;
    const float c = std::cos(rad), s = std::sin(rad);
    // scale 1, shear tan(0) = 0, translation 0, as Keras computes them.
    const float a0 = 1.0f * (c + 0.0f * s);
    const float a1 = 1.0f * (-s + 0.0f * c);
    const float a2 = ((0.0f + cx) - cx * a0) - cy * a1;
    const float b0 = 1.0f * (0.0f * c + s);
    const float b1 = 1.0f * (0.0f * -s + c);
    const float b2 = ((0.0f + cy) - cx * b0) - cy * b1;
    float* r = o + i * 8;
    r[0] = a0, r[1] = a1, r[2] = a2, r[3] = b0, r[4] = b1, r[5] = b2, r[6] = 0.0f, r[7] = 0.0f;
  }
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterImageTransformOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "ImageProjectiveTransform", .num_inputs = 2, .infer_shapes = TransformShape},
           TransformForward);
  // The angles come from random draws: nothing to differentiate.
  Register(r,
           {.name = "RotationTransform",
            .num_inputs = 1,
            .infer_shapes = RotationShape,
            .differentiable = false},
           RotationForward);
}

}  // namespace troupe
