#include "kernels/round_precision.h"

#include <cstring>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/dtype_traits.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

inline uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace

// Branch-free so that the loop below vectorises: round half to even by adding 0x7fff plus the
// lowest kept bit, then truncate; a NaN is made quiet instead (its payload's top bits kept).
namespace {
inline uint32_t BFloat16Bits(uint32_t u) {
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t quiet_nan = (u | 0x00400000u) & 0xffff0000u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}
}  // namespace

float RoundToBFloat16(float x) { return FromBits(BFloat16Bits(Bits(x))); }

float RoundToHalf(float x) { return static_cast<float>(half(x)); }

void RoundToPrecision(DType dtype, const float* in, float* out, int64_t n) {
  if (dtype == DType::kBFloat16) {
    int64_t i = 0;
#if defined(__AVX2__)
    // BFloat16Bits, 8 lanes at a time.
    const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    const __m256i quiet = _mm256_set1_epi32(0x00400000), abs_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    for (; i + 8 <= n; i += 8) {
      const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
      const __m256i rounded =
          _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(u, bias), lsb), high);
      const __m256i quiet_nan = _mm256_and_si256(_mm256_or_si256(u, quiet), high);
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm256_blendv_epi8(rounded, quiet_nan, nan));
    }
#endif
    for (; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, in + i, sizeof u);
      u = BFloat16Bits(u);
      std::memcpy(out + i, &u, sizeof u);
    }
    return;
  }
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = RoundToHalf(in[i]);
}

namespace {

Result<SpecList> RoundShape(Specs in, const AttrMap& attrs) {
  auto dst = attrs.GetDType("DstT");
  if (!dst.ok()) return dst.status().WithContext("RoundToPrecision");
  if (*dst != DType::kBFloat16 && *dst != DType::kHalf) {
    return OpError("RoundToPrecision",
                   "'DstT' must be bfloat16 or half, not " + std::string(DTypeName(*dst)));
  }
  if (in[0].dtype != DType::kFloat32) {
    return OpError("RoundToPrecision",
                   "'x' must be float32, not " + std::string(DTypeName(in[0].dtype)));
  }
  return SpecList{TensorSpec{in[0].shape, DType::kFloat32, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterRoundToPrecisionOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "RoundToPrecision", .num_inputs = 1, .infer_shapes = RoundShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, RoundShape(InputSpecs(ctx), ctx.attrs()));
             DType dst = *ctx.attrs().GetDType("DstT");
             const Tensor& x = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, DType::kFloat32, x.shape()));
             const float* in = x.data<float>();
             float* o = y.data<float>();
             ParallelFor(ctx.pool(), x.num_elements(), 2, [&](int64_t b, int64_t e) {
               RoundToPrecision(dst, in + b, o + b, e - b);
             });
             return Status::OK();
           });
}

}  // namespace troupe
