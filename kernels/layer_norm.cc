// Fused layer normalization over the last dim D:
//   FusedLayerNorm(x [..., D], gamma [D], beta [D]; epsilon)
//     -> y, mean [...], variance [...] (biased, per row)
//   FusedLayerNormGrad(dy, x, gamma [D], mean [...], variance [...]; epsilon)
//     -> dx, dgamma [D], dbeta [D]
// The forward op has the bits of the unfused graph of nn::LayerNormalization (Keras'
// layer_normalization): mean = Mean(x, -1), variance = Mean(SquaredDifference(x, mean), -1)
// (the Sum op's row sums, kernels/lane_sum.h), inv = Rsqrt(variance + eps) *
// gamma, y = x * inv + (-mean * inv + beta), each step rounded as the separate ops round it.
// The backward op: xhat = (x - mean) * rstd, g = dy * gamma,
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), dgamma = sum_rows(dy * xhat),
//   dbeta = sum_rows(dy), the row sums in lane_sum.h's order and the column sums in
//   channel_sums.h's
// order: the same bits for any thread count and vector width.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/channel_sums.h"
#include "kernels/elementwise_impl.h"
#include "kernels/lane_sum.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

Result<SpecList> LnShape(std::string_view op, Specs in, const AttrMap& attrs, bool grad) {
  TROUPE_RETURN_IF_ERROR(attrs.GetFloat("epsilon").status().WithContext(op));
  const TensorSpec& x = in[grad ? 1 : 0];
  TROUPE_RETURN_IF_ERROR(CheckDType(op, "x", x.dtype, {DType::kFloat32}));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(op, "x", x.shape, 1));
  const int rank = x.shape.unknown_rank() ? -1 : x.shape.rank();
  const TensorShape ds({rank < 0 ? -1 : x.shape.dim(rank - 1)});
  TensorShape rows_shape = x.shape;
  if (rank > 0) rows_shape.RemoveDim(rank - 1);
  std::vector<std::pair<const char*, TensorShape>> args;
  if (grad) {
    args = {{"dy", x.shape}, {"gamma", ds}, {"mean", rows_shape}, {"variance", rows_shape}};
  } else {
    args = {{"gamma", ds}, {"beta", ds}};
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorSpec& s = in[grad ? (i == 0 ? 0 : i + 1) : i + 1];
    TROUPE_RETURN_IF_ERROR(CheckSameDType(op, "x", x.dtype, args[i].first, s.dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(op, "expected", args[i].second, args[i].first, s.shape));
  }
  if (grad) {
    return SpecList{x, TensorSpec{ds, x.dtype, ""}, TensorSpec{ds, x.dtype, ""}};
  }
  return SpecList{x, TensorSpec{rows_shape, x.dtype, ""}, TensorSpec{rows_shape, x.dtype, ""}};
}

Status Forward(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList specs,
                          LnShape("FusedLayerNorm", InputSpecs(ctx), ctx.attrs(), false));
  const Tensor& x = ctx.input(0);
  const float eps = static_cast<float>(*ctx.attrs().GetFloat("epsilon"));
  const int64_t d = x.dim(x.rank() - 1);
  const int64_t rows = specs[1].shape.num_elements();
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, DType::kFloat32, x.shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor mean_t, ctx.AllocateOutput(1, DType::kFloat32, specs[1].shape));
  TROUPE_ASSIGN_OR_RETURN(Tensor var_t, ctx.AllocateOutput(2, DType::kFloat32, specs[2].shape));
  if (d == 0 || rows == 0) return Status::OK();
  const float* xp = x.data<float>();
  float* mean = mean_t.data<float>();
  float* var = var_t.data<float>();
  const float count = static_cast<float>(d);
  ParallelFor(ctx.pool(), rows, 4 * d, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = xp + r * d;
      const float m = RowSum<float>(d, [xr](int64_t i) { return xr[i]; }) / count;
      mean[r] = m;
      var[r] = RowSum<float>(d,
                             [xr, m](int64_t i) {
                               const float t = xr[i] - m;
                               return t * t;
                             }) /
               count;
    }
  });
  // rs = Rsqrt(variance + eps) over all rows, split as the Add and Rsqrt ops split it.
  TROUPE_ASSIGN_OR_RETURN(Tensor rs_t, Tensor::Allocate(DType::kFloat32, specs[2].shape));
  float* rs = rs_t.data<float>();
  for (int64_t r = 0; r < rows; ++r) rs[r] = var[r] + eps;
  UnaryLoop<float, float>(ctx.pool(), rs, rs, rows, 4, [](const auto& v) { return v.rsqrt(); });
  const float* gamma = ctx.input(1).data<float>();
  const float* beta = ctx.input(2).data<float>();
  float* yp = y.data<float>();
  ParallelFor(ctx.pool(), rows, 4 * d, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = xp + r * d;
      float* yr = yp + r * d;
      const float s = rs[r], nm = -mean[r];
      for (int64_t j = 0; j < d; ++j) {
        const float inv = s * gamma[j];
        const float scaled_mean = nm * inv;
        const float res = scaled_mean + beta[j];
        const float scaled = xr[j] * inv;
        yr[j] = scaled + res;
      }
    }
  });
  return Status::OK();
}

Status Backward(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList specs,
                          LnShape("FusedLayerNormGrad", InputSpecs(ctx), ctx.attrs(), true));
  const Tensor& x = ctx.input(1);
  const double eps = static_cast<float>(*ctx.attrs().GetFloat("epsilon"));
  const int64_t d = x.dim(x.rank() - 1);
  const int64_t rows = d == 0 ? 0 : x.num_elements() / d;
  TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, DType::kFloat32, x.shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor dgamma, ctx.AllocateOutput(1, DType::kFloat32, specs[1].shape));
  TROUPE_ASSIGN_OR_RETURN(Tensor dbeta, ctx.AllocateOutput(2, DType::kFloat32, specs[2].shape));
  const float* dyp = ctx.input(0).data<float>();
  const float* xp = x.data<float>();
  const float* gamma = ctx.input(2).data<float>();
  const float* mean = ctx.input(3).data<float>();
  const float* var = ctx.input(4).data<float>();
  // dy * xhat, kept for the column sum of dgamma.
  std::vector<float> dy_xhat(static_cast<size_t>(rows * d));
  float* dxp = dx.data<float>();
  ParallelFor(ctx.pool(), rows, 8 * d, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* dyr = dyp + r * d;
      const float* xr = xp + r * d;
      const float m = mean[r];
      const double rstd = 1.0 / std::sqrt(static_cast<double>(var[r]) + eps);
      const float rstd_f = static_cast<float>(rstd);
      const double s1 = RowSum<float>(d, [&](int64_t i) { return dyr[i] * gamma[i]; });
      const double s2 = RowSum<float>(d, [&](int64_t i) {
        const float g = dyr[i] * gamma[i];
        return g * (xr[i] - m);
      });
      const float a = rstd_f;
      const float bc = static_cast<float>(-rstd * rstd * rstd * s2 / static_cast<double>(d));
      const float c = static_cast<float>(-rstd * s1 / static_cast<double>(d));
      float* o = dxp + r * d;
      float* t = dy_xhat.data() + r * d;
      for (int64_t j = 0; j < d; ++j) {
        const float xc = xr[j] - m;
        const float g = dyr[j] * gamma[j];
        const float t0 = a * g;
        const float t1 = bc * xc;
        o[j] = (t0 + t1) + c;
        const float xhat = xc * rstd_f;
        t[j] = dyr[j] * xhat;
      }
    }
  });
  std::vector<double> sums(static_cast<size_t>(2 * d));
  double* outs[2] = {sums.data(), sums.data() + d};
  const float* tp = dy_xhat.data();
  channel_sums::ChannelSums<2, double>(
      ctx.pool(), rows, d,
      [dyp, tp](int64_t i, int64_t) {
        return std::array<double, 2>{dyp[i], tp[i]};
      },
      outs);
  for (int64_t j = 0; j < d; ++j) {
    dbeta.data<float>()[j] = static_cast<float>(outs[0][j]);
    dgamma.data<float>()[j] = static_cast<float>(outs[1][j]);
  }
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterLayerNormOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r,
           {.name = "FusedLayerNorm",
            .num_inputs = 3,
            .num_outputs = 3,
            .infer_shapes =
                [](Specs in, const AttrMap& a) { return LnShape("FusedLayerNorm", in, a, false); }},
           Forward);
  Register(
      r,
      {.name = "FusedLayerNormGrad",
       .num_inputs = 5,
       .num_outputs = 3,
       .infer_shapes = [](Specs in,
                          const AttrMap& a) { return LnShape("FusedLayerNormGrad", in, a, true); }},
      Backward);
}

}  // namespace troupe
