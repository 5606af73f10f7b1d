// Internal: float exp and erf with the same bits on every path: 8 lanes of AVX2+FMA (the
// default build's x86-64-v3 target) and a scalar fallback (tails, other CPUs) that runs the
// same operations in the same order with explicit fmaf. Lanes never interact, so the result
// of an element depends only on its input, not on the thread split, alignment or tail length.
//
// Include only from files compiled with -ffp-contract=off (kernels/CMakeLists.txt): a
// contracted a * b + c would differ between the two paths.
//
//   Erf: Eigen's generic_fast_erf_float (the rational approximation TF's Erf kernel runs for
//        float), inputs clamped to [-4, 4].
//   Exp: Cephes' expf (range reduction by ln 2 in two parts, degree-5 polynomial, 2^n built in
//        the exponent bits), about 1 ulp. Inputs below -87 give +0 (no denormals),
//        inputs above 88 give exp(88); NaN stays NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TROUPE_SIMD_MATH_AVX2 1
#else
#define TROUPE_SIMD_MATH_AVX2 0
#endif

namespace troupe {
namespace kernels {
namespace simd_math {

// The scalar operations; Min/Max return the second operand when either is NaN, as
// _mm256_min_ps / _mm256_max_ps do.
struct ScalarOps {
  using V = float;
  static V Set(float v) { return v; }
  static V Add(V a, V b) { return a + b; }
  static V Sub(V a, V b) { return a - b; }
  static V Mul(V a, V b) { return a * b; }
  static V Div(V a, V b) { return a / b; }
  static V Fma(V a, V b, V c) { return std::fmaf(a, b, c); }
  static V Min(V a, V b) { return a < b ? a : b; }
  static V Max(V a, V b) { return a > b ? a : b; }
  static V Floor(V a) { return std::floor(a); }
  // 2^n for an integral n in [-126, 127].
  static V Pow2(V n) {
    const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  // a where lo <= x, else +0; x where x is NaN.
  static V ZeroBelow(V a, V x, float lo) { return x != x ? x : (x < lo ? 0.0f : a); }
};

#if TROUPE_SIMD_MATH_AVX2
struct Avx2Ops {
  using V = __m256;
  static V Set(float v) { return _mm256_set1_ps(v); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm256_div_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Min(V a, V b) { return _mm256_min_ps(a, b); }
  static V Max(V a, V b) { return _mm256_max_ps(a, b); }
  static V Floor(V a) { return _mm256_floor_ps(a); }
  static V Pow2(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static V ZeroBelow(V a, V x, float lo) {
    const V kept = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_LT_OQ), a);
    return _mm256_blendv_ps(kept, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
};
#endif

template <typename O>
inline typename O::V Erf(typename O::V a) {
  using V = typename O::V;
  const V x = O::Max(O::Min(a, O::Set(4.f)), O::Set(-4.f));
  const V x2 = O::Mul(x, x);
  V p = O::Fma(x2, O::Set(-2.72614225801306e-10f), O::Set(2.77068142495902e-08f));
  p = O::Fma(x2, p, O::Set(-2.10102402082508e-06f));
  p = O::Fma(x2, p, O::Set(-5.69250639462346e-05f));
  p = O::Fma(x2, p, O::Set(-7.34990630326855e-04f));
  p = O::Fma(x2, p, O::Set(-2.95459980854025e-03f));
  p = O::Fma(x2, p, O::Set(-1.60960333262415e-02f));
  p = O::Mul(x, p);
  V q = O::Fma(x2, O::Set(-1.45660718464996e-05f), O::Set(-2.13374055278905e-04f));
  q = O::Fma(x2, q, O::Set(-1.68282697438203e-03f));
  q = O::Fma(x2, q, O::Set(-7.37332916720468e-03f));
  q = O::Fma(x2, q, O::Set(-1.42647390514189e-02f));
  return O::Div(p, q);
}

// Inputs below this give +0. Just above ln(FLT_MIN) = -87.34 so that no intermediate
// y * 2^n is ever denormal: a denormal product costs a microcode assist per lane (masked
// attention logits hit this on every other element).
constexpr float kExpLo = -87.0f;

template <typename O>
inline typename O::V Exp(typename O::V a) {
  using V = typename O::V;
  // Min(hi, a) / Max(lo, .) keep a NaN input (the second operand wins).
  const V x0 = O::Max(O::Set(kExpLo), O::Min(O::Set(88.0f), a));
  // n = round(x / ln 2); r = x - n ln 2 with ln 2 split in two for an exact first product.
  const V n = O::Floor(O::Fma(x0, O::Set(1.44269504088896341f), O::Set(0.5f)));
  V r = O::Fma(n, O::Set(-0.693359375f), x0);
  r = O::Fma(n, O::Set(2.12194440e-4f), r);
  const V r2 = O::Mul(r, r);
  V y = O::Fma(O::Set(1.9875691500e-4f), r, O::Set(1.3981999507e-3f));
  y = O::Fma(y, r, O::Set(8.3334519073e-3f));
  y = O::Fma(y, r, O::Set(4.1665795894e-2f));
  y = O::Fma(y, r, O::Set(1.6666665459e-1f));
  y = O::Fma(y, r, O::Set(5.0000001201e-1f));
  y = O::Fma(y, r2, r);
  y = O::Add(y, O::Set(1.0f));
  // Max(n, lo) turns a NaN n into -126 (never converted to int); ZeroBelow returns the NaN.
  const V scale = O::Pow2(O::Max(n, O::Set(-126.0f)));
  return O::ZeroBelow(O::Mul(y, scale), a, kExpLo);
}

}  // namespace simd_math
}  // namespace kernels
}  // namespace troupe
