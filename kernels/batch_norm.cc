// Fused training-mode batch normalization over the last (channel) dim, in few passes over x:
//   FusedBatchNormTraining(x [..., C], gamma [C], beta [C]; epsilon)
//     -> y, batch mean [C], batch variance [C] (biased)
//   FusedBatchNormTrainingGrad(dy, x, gamma [C], mean [C], variance [C]; epsilon)
//     -> dx, dgamma [C], dbeta [C]
// Unlike TF's FusedBatchNormV3 (one-pass moments, Bessel-corrected variance output), the forward
// op reproduces Keras' unfused graph bit for bit: mean = Mean(x), variance =
// Mean(SquaredDifference(x, mean)) with ReduceInto's summation order, then
// inv = Rsqrt(variance + eps) * gamma, y = x * inv + (beta - mean * inv), each step rounded as
// the separate ops round it. The backward op is TF's formula
//   dx = gamma * rstd * (dy - mean(dy) - (x - mean) * rstd^2 * mean(dy * (x - mean))).
// Per-channel sums run over fixed row chunks combined in chunk order, and each channel is one
// SIMD lane, so the bits depend neither on the thread count nor on the vector width.
//
// The Relu variants fuse the Conv-BN-ReLU pattern's activation:
//   FusedBatchNormReluTraining(x, gamma, beta; epsilon) -> Relu(y), mean, variance
//   FusedBatchNormReluTrainingGrad(dy, x, gamma, mean, variance, beta; epsilon) -> dx, dgamma,
//   dbeta
// where the gradient first masks dy as ReluGrad does with the forward's output y (dy * (y > 0)),
// y's sign recomputed from x, gamma, beta and the forward's statistics with the forward's
// arithmetic (two passes over dy and x, not over y too), so both have the bits of the separate
// Relu / ReluGrad ops around the plain ones, without the intermediate tensors.
//
// The Bias variants (FusedBiasBatchNorm[Relu]Training[Grad]) take one more input, last: the
// bias [C] of the convolution before them, and normalize x + bias (each sum rounded as the
// broadcasting AddV2 rounds it) without that tensor; their gradients add dbias, the column sums
// of dx in the order of SumToShapeOf (ReduceInto's), to their outputs, summed chunk by chunk
// as dx is written.
//
// The AddRelu variants fuse the residual join after a block's last normalization:
//   Fused[Bias]BatchNormAddReluTraining(x, gamma, beta[, bias], shortcut) -> Relu(y + shortcut),
//   mean, variance
// (y as above, rounded, then the sum rounded as AddRelu rounds it), without writing y and
// reading it back. Their gradient is the separate ops' (graph/nn_grad.cc): AddReluGrad through
// the output, then the plain FusedBatchNorm[Bias]TrainingGrad.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/channel_sums.h"
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

using channel_sums::ChannelSums;
using channel_sums::Repeat;

// A 64-byte aligned [n] float scratch, so that Eigen's vectorized Rsqrt splits it into packets
// (and a scalar tail) the way it splits the (aligned) tensors of the unfused graph.
struct Scratch {
  explicit Scratch(int64_t n) : t(*Tensor::Allocate(DType::kFloat32, TensorShape({n}))) {}
  float* data() { return t.data<float>(); }
  Tensor t;
};

// fn(base, len) over the flat [rows, C] elements in runs of whole rows, m = ceil(kShortRow / C)
// rows at a time (so short channel counts still give long vector loops); element base + j has
// channel j % C, and per-channel arrays Repeat()ed to m * C entries are indexed by j.
template <typename Fn>
void ForRowGroups(ThreadPool* pool, int64_t rows, int64_t c, int64_t cost, const Fn& fn) {
  const int64_t m = channel_sums::Interleave(channel_sums::kShortRow, c);
  const int64_t groups = (rows + m - 1) / m;
  ParallelFor(pool, groups, cost * m * c, [&](int64_t b, int64_t e) {
    for (int64_t g = b; g < e; ++g) fn(g * m * c, (std::min(rows, (g + 1) * m) - g * m) * c);
  });
}

// write(base, len) over all rows as ForRowGroups does, but in ChannelSums' chunks, and `sums`
// = the column sums of what it wrote, in ChannelSums<float>'s order (so the bits of
// SumToShapeOf on the written tensor): each chunk (256 KB) is summed right after it is written,
// from L2, instead of in one more pass over the whole tensor from memory.
template <typename Write>
void WriteAndSum(ThreadPool* pool, int64_t rows, int64_t c, const Write& write, const float* out,
                 float* sums) {
  if (rows == 0) {
    std::fill(sums, sums + c, 0.f);
    return;
  }
  const channel_sums::ChunkPlan p = channel_sums::PlanChunks(rows, c);
  std::vector<float> partial(static_cast<size_t>(p.num_chunks * c));
  ParallelForBlocks(pool, p.num_chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t r0 = u * p.rows_per_chunk, r1 = std::min(rows, r0 + p.rows_per_chunk);
      const int64_t m = channel_sums::Interleave(r1 - r0, c);
      for (int64_t r = r0; r < r1; r += m) write(r * c, (std::min(r1, r + m) - r) * c);
      float* dst[1] = {partial.data() + u * c};
      auto f = [out](int64_t i, int64_t) { return std::array<float, 1>{out[i]}; };
      channel_sums::ChunkSums<1, float>(r0, r1, c, m, f, dst);
    }
  });
  std::copy_n(partial.data(), c, sums);
  for (int64_t u = 1; u < p.num_chunks; ++u) {
    for (int64_t j = 0; j < c; ++j) sums[j] += partial[static_cast<size_t>(u * c + j)];
  }
}

Result<SpecList> ForwardShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "FusedBatchNormTraining";
  TROUPE_RETURN_IF_ERROR(attrs.GetFloat("epsilon").status().WithContext(kOp));
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "x", in[0].dtype, {DType::kFloat32}));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "x", in[0].shape, 1));
  const int64_t c = in[0].shape.unknown_rank() ? -1 : in[0].shape.dim(in[0].shape.rank() - 1);
  const TensorShape cs({c});
  for (int i = 1; i < 3; ++i) {
    const char* arg = i == 1 ? "gamma" : "beta";
    TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "x", in[0].dtype, arg, in[i].dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "channels of x", cs, arg, in[i].shape));
  }
  if (in.size() > 3) {
    TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "x", in[0].dtype, "bias", in[3].dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "channels of x", cs, "bias", in[3].shape));
  }
  return SpecList{in[0], TensorSpec{cs, in[0].dtype, ""}, TensorSpec{cs, in[0].dtype, ""}};
}

Result<SpecList> BackwardShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "FusedBatchNormTrainingGrad";
  TROUPE_RETURN_IF_ERROR(attrs.GetFloat("epsilon").status().WithContext(kOp));
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "dy", in[0].dtype, {DType::kFloat32}));
  TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "dy", in[0].shape, "x", in[1].shape));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "x", in[1].shape, 1));
  const int64_t c = in[1].shape.unknown_rank() ? -1 : in[1].shape.dim(in[1].shape.rank() - 1);
  const TensorShape cs({c});
  static constexpr const char* kArgs[] = {"dy", "x", "gamma", "mean", "variance"};
  for (int i = 1; i < 5; ++i) {
    TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "dy", in[0].dtype, kArgs[i], in[i].dtype));
    if (i >= 2) {
      TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "channels of x", cs, kArgs[i], in[i].shape));
    }
  }
  return SpecList{in[1], TensorSpec{cs, in[0].dtype, ""}, TensorSpec{cs, in[0].dtype, ""}};
}

// As the Relu op (Eigen's max(v, 0), which is std::max): NaN and -0 pass through unchanged.
inline float Relu(float v) { return std::max(v, 0.f); }

// As the ReluGrad op: g * (y > 0), a product with 1 or 0 (so -0 and NaN behave as there).
// y > 0 is tested on y's bits (0 < bits <= +inf's as int32; NaN and negatives fail), which
// GCC vectorizes; a float compare here becomes a mispredicted branch per element.
inline float MaskedGrad(float g, float y) {
  int32_t bits;
  std::memcpy(&bits, &y, sizeof bits);
  const int32_t positive =
      static_cast<int32_t>(bits > 0) & static_cast<int32_t>(bits <= 0x7f800000);
  return g * static_cast<float>(positive);
}

// The gradients' inputs past the plain op's five: beta (kRelu), then bias (kBias).
template <bool kRelu, bool kBias>
Result<SpecList> GradShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "FusedBatchNorm*TrainingGrad";
  TROUPE_ASSIGN_OR_RETURN(SpecList out, BackwardShape(in.first(5), attrs));
  if (kRelu) {
    TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "dy", in[0].dtype, "beta", in[5].dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "gamma", in[2].shape, "beta", in[5].shape));
  }
  if (kBias) {
    const size_t b = kRelu ? 6 : 5;
    TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "dy", in[0].dtype, "bias", in[b].dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "gamma", in[2].shape, "bias", in[b].shape));
    out.push_back(in[b]);
  }
  return out;
}

// x[i] (+ bias of its channel: w indexes the Repeat()ed bias, as in ChannelSums).
template <bool kBias>
struct BiasedX {
  const float* x;
  const float* bias;  // Repeat()ed; unused without kBias
  float operator()(int64_t i, int64_t w) const { return kBias ? x[i] + bias[w] : x[i]; }
};

// inv = Rsqrt(var + eps) * gamma and shift = beta - mean * inv (one rounding per op, as the
// graph), Repeat()ed: the forward's y = x * inv + shift. The Relu gradients call it too, on the
// forward's own inputs and outputs, to recompute the sign of y exactly instead of reading y.
void Normalizer(ThreadPool* pool, int64_t c, const float* mean, const float* var,
                const float* gamma, const float* beta, float eps, std::vector<float>* inv_rep,
                std::vector<float>* shift_rep) {
  Scratch inv(c), shift(c);
  for (int64_t j = 0; j < c; ++j) shift.data()[j] = var[j] + eps;
  UnaryLoop<float, float>(pool, shift.data(), inv.data(), c, 4,
                          [](const auto& v) { return v.rsqrt(); });  // as the Rsqrt op
  for (int64_t j = 0; j < c; ++j) {
    inv.data()[j] *= gamma[j];
    const float mi = mean[j] * inv.data()[j];
    shift.data()[j] = beta[j] - mi;
  }
  *inv_rep = Repeat(inv.data(), c);
  *shift_rep = Repeat(shift.data(), c);
}

// The AddRelu variants: the plain (Bias) op's inputs, then the shortcut, shaped as x.
template <bool kBias>
Result<SpecList> AddReluShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Fused[Bias]BatchNormAddReluTraining";
  const size_t s = kBias ? 4 : 3;
  TROUPE_ASSIGN_OR_RETURN(SpecList out, ForwardShape(in.first(s), attrs));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "x", in[0].dtype, "shortcut", in[s].dtype));
  TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "x", in[0].shape, "shortcut", in[s].shape));
  return out;
}

template <bool kRelu, bool kBias, bool kAdd = false>
Status Forward(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList specs, kAdd ? AddReluShape<kBias>(InputSpecs(ctx), ctx.attrs())
                                               : ForwardShape(InputSpecs(ctx), ctx.attrs()));
  const Tensor& x = ctx.input(0);
  const float eps = static_cast<float>(*ctx.attrs().GetFloat("epsilon"));
  const int64_t c = specs[1].shape.dim(0);
  const int64_t rows = c == 0 ? 0 : x.num_elements() / c;
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, DType::kFloat32, x.shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor mean_t, ctx.AllocateOutput(1, DType::kFloat32, specs[1].shape));
  TROUPE_ASSIGN_OR_RETURN(Tensor var_t, ctx.AllocateOutput(2, DType::kFloat32, specs[2].shape));
  const std::vector<float> bias_rep =
      kBias ? Repeat(ctx.input(3).data<float>(), c) : std::vector<float>();
  const BiasedX<kBias> xv{x.data<float>(), bias_rep.data()};
  float* mean = mean_t.data<float>();
  float* var = var_t.data<float>();
  const float count = static_cast<float>(rows);  // Mean: the sum divided by the count
  {
    float* outs[1] = {mean};
    auto x1 = [&xv](int64_t i, int64_t w) { return std::array<float, 1>{xv(i, w)}; };
    ChannelSums<1, float>(ctx.pool(), rows, c, x1, outs);
    if (rows > 0)
      for (int64_t j = 0; j < c; ++j) mean[j] /= count;
  }
  {
    float* outs[1] = {var};
    const std::vector<float> rep = Repeat(mean, c);
    auto sq = [&xv, m = rep.data()](int64_t i, int64_t w) {
      const float d = xv(i, w) - m[w];
      return std::array<float, 1>{d * d};
    };
    ChannelSums<1, float>(ctx.pool(), rows, c, sq, outs);
    if (rows > 0)
      for (int64_t j = 0; j < c; ++j) var[j] /= count;
  }
  std::vector<float> ip, sp;
  Normalizer(ctx.pool(), c, mean, var, ctx.input(1).data<float>(), ctx.input(2).data<float>(), eps,
             &ip, &sp);
  float* yp = y.data<float>();
  const float* sc = kAdd ? ctx.input(kBias ? 4 : 3).data<float>() : nullptr;
  ForRowGroups(ctx.pool(), rows, c, 2, [&](int64_t base, int64_t len) {
    for (int64_t j = 0; j < len; ++j) {
      const float scaled = xv(base + j, j) * ip[j];
      const float v = scaled + sp[j];
      if constexpr (kAdd) {
        yp[base + j] = Relu(v + sc[base + j]);
      } else {
        yp[base + j] = kRelu ? Relu(v) : v;
      }
    }
  });
  return Status::OK();
}

template <bool kRelu, bool kBias>
Status Backward(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList specs, (GradShape<kRelu, kBias>(InputSpecs(ctx), ctx.attrs())));
  const Tensor& x = ctx.input(1);
  const double eps = static_cast<float>(*ctx.attrs().GetFloat("epsilon"));
  const int64_t c = specs[1].shape.dim(0);
  const int64_t rows = c == 0 ? 0 : x.num_elements() / c;
  TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, DType::kFloat32, x.shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor dgamma_t, ctx.AllocateOutput(1, DType::kFloat32, specs[1].shape));
  TROUPE_ASSIGN_OR_RETURN(Tensor dbeta_t, ctx.AllocateOutput(2, DType::kFloat32, specs[2].shape));
  const float* dyp = ctx.input(0).data<float>();
  const std::vector<float> bias_rep =
      kBias ? Repeat(ctx.input(kRelu ? 6 : 5).data<float>(), c) : std::vector<float>();
  const BiasedX<kBias> xv{x.data<float>(), bias_rep.data()};
  const float* gamma = ctx.input(2).data<float>();
  const float* mean = ctx.input(3).data<float>();
  const float* var = ctx.input(4).data<float>();
  float* dgamma = dgamma_t.data<float>();
  float* dbeta = dbeta_t.data<float>();
  // The Relu variants mask dy by y > 0 as ReluGrad does, y = Relu(x * inv + shift) recomputed
  // from x with the forward's arithmetic (so its bits) instead of read; Relu keeps the test's
  // outcome (Relu(v) > 0 exactly when v > 0, NaN and -0 included).
  std::vector<float> ip, sp;
  if constexpr (kRelu) {
    Normalizer(ctx.pool(), c, mean, var, gamma, ctx.input(5).data<float>(), static_cast<float>(eps),
               &ip, &sp);
  }
  auto grad = [dyp, &xv, ipp = ip.data(), spp = sp.data()](int64_t i, int64_t w) {
    if constexpr (kRelu) {
      const float scaled = xv(i, w) * ipp[w];
      return MaskedGrad(dyp[i], scaled + spp[w]);
    } else {
      return dyp[i];
    }
  };
  // Per channel, in double: sum(dy) and sum(dy * (x - mean)).
  std::vector<double> sum_dy(static_cast<size_t>(c)), sum_dyxc(sum_dy.size());
  double* outs[2] = {sum_dy.data(), sum_dyxc.data()};
  const std::vector<float> rep = Repeat(mean, c);
  auto terms = [&grad, &xv, m = rep.data()](int64_t i, int64_t w) {
    const float xc = xv(i, w) - m[w];
    const float g = grad(i, w);
    return std::array<double, 2>{g, static_cast<double>(g) * xc};
  };
  ChannelSums<2, double>(ctx.pool(), rows, c, terms, outs);
  // dx = a * dy + b * (x - mean) + d per channel; the coefficients in double, rounded once.
  std::vector<float> a(static_cast<size_t>(c)), bcoef(a.size()), d(a.size());
  const double n = static_cast<double>(std::max<int64_t>(rows, 1));
  for (int64_t j = 0; j < c; ++j) {
    const double rstd = 1.0 / std::sqrt(static_cast<double>(var[j]) + eps);
    const double g = gamma[j];
    const double sdy = sum_dy[static_cast<size_t>(j)], sdyxc = sum_dyxc[static_cast<size_t>(j)];
    a[j] = static_cast<float>(g * rstd);
    bcoef[j] = static_cast<float>(-g * rstd * rstd * rstd * sdyxc / n);
    d[j] = static_cast<float>(-g * rstd * sdy / n);
    dgamma[j] = static_cast<float>(sdyxc * rstd);
    dbeta[j] = static_cast<float>(sdy);
  }
  const std::vector<float> ar = Repeat(a.data(), c), br = Repeat(bcoef.data(), c),
                           dr = Repeat(d.data(), c);
  float* dxp = dx.data<float>();
  // dx aliases no input; said so (ivdep), GCC vectorizes the loop without run-time overlap
  // checks, which the Bias and Relu variants' arrays put over its limit (leaving it scalar).
  auto dx_group = [&](int64_t base, int64_t len) {
#pragma GCC ivdep
    for (int64_t j = 0; j < len; ++j) {
      const float t0 = ar[j] * grad(base + j, j);
      const float t1 = br[j] * (xv(base + j, j) - rep[j]);
      dxp[base + j] = (t0 + t1) + dr[j];
    }
  };
  if constexpr (kBias) {
    TROUPE_ASSIGN_OR_RETURN(Tensor dbias_t, ctx.AllocateOutput(3, DType::kFloat32, specs[3].shape));
    WriteAndSum(ctx.pool(), rows, c, dx_group, dxp, dbias_t.data<float>());
  } else {
    ForRowGroups(ctx.pool(), rows, c, 4, dx_group);
  }
  return Status::OK();
}

// `name` (x, gamma, beta[, bias]) and `name`Grad (dy, x, gamma, mean, variance[, y][, bias]).
template <bool kRelu, bool kBias>
void RegisterVariants(OpRegistry& r, const std::string& name) {
  Register(
      r,
      {.name = name, .num_inputs = kBias ? 4 : 3, .num_outputs = 3, .infer_shapes = ForwardShape},
      Forward<kRelu, kBias>);
  Register(r,
           {.name = name + "Grad",
            .num_inputs = 5 + int{kRelu} + int{kBias},
            .num_outputs = kBias ? 4 : 3,
            .infer_shapes = GradShape<kRelu, kBias>},
           Backward<kRelu, kBias>);
}

}  // namespace
}  // namespace kernels

void RegisterLayerNormOps(OpRegistry& r);  // kernels/layer_norm.cc
void RegisterAddReluOps(OpRegistry& r);    // kernels/add_relu.cc

// The fused normalization ops: batch norm here, layer norm in layer_norm.cc; and AddRelu, the
// other fused op of CNN blocks.
void RegisterBatchNormOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  RegisterLayerNormOps(r);
  RegisterAddReluOps(r);
  RegisterVariants<false, false>(r, "FusedBatchNormTraining");
  RegisterVariants<true, false>(r, "FusedBatchNormReluTraining");
  RegisterVariants<false, true>(r, "FusedBiasBatchNormTraining");
  RegisterVariants<true, true>(r, "FusedBiasBatchNormReluTraining");
  Register(r,
           {.name = "FusedBatchNormAddReluTraining",
            .num_inputs = 4,
            .num_outputs = 3,
            .infer_shapes = AddReluShape<false>},
           Forward<false, false, true>);
  Register(r,
           {.name = "FusedBiasBatchNormAddReluTraining",
            .num_inputs = 5,
            .num_outputs = 3,
            .infer_shapes = AddReluShape<true>},
           Forward<false, true, true>);
}

}  // namespace troupe
