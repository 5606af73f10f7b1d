// Fused exact GELU (CPU only, float32; graph/nn/activations.cc emits it when tracing for the
// CPU unless TROUPE_FUSED_OPS=0):
//   FusedGelu(x) -> y = (0.5 * x) * (1 - erf(-x * 0.70710678)), tf.nn.gelu(approximate=False)
//     in the form of nn::Gelu's unfused graph (erfc(z) as 1 - erf(z));
//   FusedGeluGrad(dy, x) -> dx = dy * (cdf + x * pdf), cdf = 0.5 * (1 - erf(-x * 0.70710678)),
//     pdf = exp(-(x * 0.70710678)^2) / sqrt(2 pi): the derivative of the same function.
// One pass each instead of the unfused graph's 6 forward and ~12 backward elementwise ops.
// erf and exp are kernels/simd_math.h's: every element's bits depend only on its inputs (the
// same on the AVX2 and scalar paths, for any thread count). Compiled with -ffp-contract=off.
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"
#include "kernels/simd_math.h"

namespace troupe {
namespace kernels {
namespace {

constexpr float kRsqrt2 = 0.7071067811865476f;
constexpr float kRsqrt2Pi = 0.3989422804014327f;

template <typename O>
inline typename O::V GeluValue(typename O::V x) {
  const auto z = O::Mul(O::Sub(O::Set(0.0f), x), O::Set(kRsqrt2));
  const auto e = simd_math::Erf<O>(z);
  return O::Mul(O::Mul(O::Set(0.5f), x), O::Sub(O::Set(1.0f), e));
}

template <typename O>
inline typename O::V GeluGradValue(typename O::V dy, typename O::V x) {
  const auto z = O::Mul(O::Sub(O::Set(0.0f), x), O::Set(kRsqrt2));
  const auto cdf = O::Mul(O::Set(0.5f), O::Sub(O::Set(1.0f), simd_math::Erf<O>(z)));
  const auto pdf = O::Mul(simd_math::Exp<O>(O::Sub(O::Set(0.0f), O::Mul(z, z))), O::Set(kRsqrt2Pi));
  return O::Mul(dy, O::Fma(x, pdf, cdf));
}

// out[i] = f(a[i]) (or f(a[i], b[i])) over [begin, end): 8 lanes at a time, the rest scalar.
template <bool kBinary, typename FV, typename FS>
void Apply(const float* a, const float* b, float* out, int64_t begin, int64_t end, const FV& fv,
           const FS& fs) {
  int64_t i = begin;
#if TROUPE_SIMD_MATH_AVX2
  for (; i + 8 <= end; i += 8) {
    const __m256 va = _mm256_loadu_ps(a + i);
    __m256 r;
    if constexpr (kBinary) {
      r = fv(va, _mm256_loadu_ps(b + i));
    } else {
      r = fv(va);
    }
    _mm256_storeu_ps(out + i, r);
  }
#endif
  for (; i < end; ++i) {
    if constexpr (kBinary) {
      out[i] = fs(a[i], b[i]);
    } else {
      out[i] = fs(a[i]);
    }
  }
}

Status GeluForward(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  TROUPE_RETURN_IF_ERROR(CheckDType("FusedGelu", "x", x.dtype(), {DType::kFloat32}));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), x.shape()));
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  ParallelFor(ctx.pool(), x.num_elements(), 30, [&](int64_t b, int64_t e) {
    auto fs = [](float v) { return GeluValue<simd_math::ScalarOps>(v); };
#if TROUPE_SIMD_MATH_AVX2
    auto fv = [](__m256 v) { return GeluValue<simd_math::Avx2Ops>(v); };
#else
    auto fv = fs;  // unused: without AVX2, Apply runs only the scalar loop
#endif
    Apply<false>(xp, nullptr, yp, b, e, fv, fs);
  });
  return Status::OK();
}

Status GeluBackward(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  TROUPE_RETURN_IF_ERROR(CheckDType("FusedGeluGrad", "dy", dy.dtype(), {DType::kFloat32}));
  TROUPE_RETURN_IF_ERROR(CheckSameDType("FusedGeluGrad", "dy", dy.dtype(), "x", x.dtype()));
  if (dy.shape() != x.shape()) {
    return OpError("FusedGeluGrad", "'dy' " + dy.shape().ToString() + " and 'x' " +
                                        x.shape().ToString() + " must have the same shape");
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, x.dtype(), x.shape()));
  const float* dyp = dy.data<float>();
  const float* xp = x.data<float>();
  float* dxp = dx.data<float>();
  ParallelFor(ctx.pool(), x.num_elements(), 50, [&](int64_t b, int64_t e) {
    auto fs = [](float g, float v) { return GeluGradValue<simd_math::ScalarOps>(g, v); };
#if TROUPE_SIMD_MATH_AVX2
    auto fv = [](__m256 g, __m256 v) { return GeluGradValue<simd_math::Avx2Ops>(g, v); };
#else
    auto fv = fs;  // unused: without AVX2, Apply runs only the scalar loop
#endif
    Apply<true>(dyp, xp, dxp, b, e, fv, fs);
  });
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterGeluOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r,
           {.name = "FusedGelu",
            .num_inputs = 1,
            .num_outputs = 1,
            .infer_shapes = UnaryShapeFn("FusedGelu", TypeSet::kFloat)},
           GeluForward);
  Register(
      r,
      {.name = "FusedGeluGrad",
       .num_inputs = 2,
       .num_outputs = 1,
       .infer_shapes = BinaryShapeFn("FusedGeluGrad", TypeSet::kFloat, "dy", "x", false, false)},
      GeluBackward);
}

}  // namespace troupe
