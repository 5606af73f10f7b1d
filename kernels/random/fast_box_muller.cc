// Double-precision AVX2 log and sincos for Box-Muller's finite argument sets, plus the
// exception bitmaps that make the result equal to glibc's logf/sincosf (see the header).
#include "kernels/random/fast_box_muller.h"

#include <array>
#include <cmath>
#include <cstring>
#include <mutex>

#include "kernels/random/tf_bits.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace troupe::random {
namespace {

constexpr int64_t kArgs = int64_t{1} << 23;  // 23 mantissa bits per argument

// 1/k! for k = 0..20: the Taylor coefficients of the AVX2 and AVX-512 sin/cos below.
constexpr std::array<double, 21> kInvFact = [] {
  std::array<double, 21> f{};
  f[0] = 1.0;
  for (int k = 1; k <= 20; ++k) f[k] = f[k - 1] / k;
  return f;
}();

// The arguments TF's BoxMullerFloat passes to logf and sincosf for mantissa bits k and j.
float LogArg(uint32_t k) {
  const float u = static_cast<float>(k) * 0x1p-23f;  // == Uint32ToFloat(k), exactly
  return u < 1.0e-7f ? 1.0e-7f : u;
}
float TrigArg(uint32_t j) {
  return static_cast<float>(2.0 * M_PI * static_cast<double>(static_cast<float>(j) * 0x1p-23f));
}

bool TestBit(const std::vector<uint64_t>& bits, uint32_t i) {
  return (bits[i >> 6] >> (i & 63)) & 1;
}

#if defined(__AVX2__)

// a * b + c; fused when the build has FMA (the rounding does not need to match anything: the
// exception bitmaps are computed with this same code).
inline __m256d MulAdd(__m256d a, __m256d b, __m256d c) {
#if defined(__FMA__)
  return _mm256_fmadd_pd(a, b, c);
#else
  return _mm256_add_pd(_mm256_mul_pd(a, b), c);
#endif
}

// log(x) for 0 < x < 2: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(f) with
// f = (m - 1) / (m + 1), |f| < 0.172, summed to f^15 (relative error < 1e-14).
inline __m256d Log4(__m256d x) {
  const __m256i bits = _mm256_castpd_si256(x);
  const __m256i exp_field = _mm256_srli_epi64(bits, 52);
  // exponent as a double: (2^52 + field) - (2^52 + 1023)
  __m256d e = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(exp_field, _mm256_set1_epi64x(0x4330000000000000LL))),
      _mm256_set1_pd(4503599627370496.0 + 1023.0));
  __m256d m = _mm256_castsi256_pd(
      _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(0x000fffffffffffffLL)),
                      _mm256_set1_epi64x(0x3ff0000000000000LL)));
  const __m256d big = _mm256_cmp_pd(m, _mm256_set1_pd(1.4142135623730951), _CMP_GT_OQ);
  m = _mm256_blendv_pd(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
  e = _mm256_add_pd(e, _mm256_and_pd(big, _mm256_set1_pd(1.0)));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d f = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
  const __m256d s = _mm256_mul_pd(f, f);
  __m256d p = _mm256_set1_pd(1.0 / 19.0);
  for (double c :
       {1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0}) {
    p = _mm256_add_pd(_mm256_mul_pd(p, s), _mm256_set1_pd(c));
  }
  const __m256d log_m = _mm256_mul_pd(_mm256_add_pd(f, f), p);
  const __m256d ln2_hi = _mm256_set1_pd(6.93147180369123816490e-01);
  const __m256d ln2_lo = _mm256_set1_pd(1.90821492927058770002e-10);
  return MulAdd(e, ln2_hi, MulAdd(e, ln2_lo, log_m));
}

// sin and cos of x in [0, 2pi]: reduce by the nearest multiple of pi/2 (two-part constant),
// Taylor polynomials to degree 13/14 on |r| <= pi/4 (error < 1e-15), then map the quadrant.
inline void SinCos4(__m256d x, __m256d* sin_out, __m256d* cos_out) {
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(0.63661977236758134308)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d r =
      _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(n, _mm256_set1_pd(1.57079632673412561417e+00))),
                    _mm256_mul_pd(n, _mm256_set1_pd(6.07710050650619224932e-11)));
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d neg_r2 = _mm256_sub_pd(_mm256_setzero_pd(), r2);
  __m256d sp = _mm256_set1_pd(kInvFact[15]);
  for (int k = 13; k >= 1; k -= 2) sp = MulAdd(sp, neg_r2, _mm256_set1_pd(kInvFact[k]));
  __m256d cp = _mm256_set1_pd(kInvFact[16]);
  for (int k = 14; k >= 0; k -= 2) cp = MulAdd(cp, neg_r2, _mm256_set1_pd(kInvFact[k]));
  const __m256d s = _mm256_mul_pd(r, sp);
  const __m256d c = cp;
  // Quadrant q = n mod 4: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
  const __m256i q = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n));
  const __m256i three = _mm256_set1_epi64x(3);
  const __m256i qm = _mm256_and_si256(q, three);
  const __m256d swap = _mm256_castsi256_pd(
      _mm256_cmpeq_epi64(_mm256_and_si256(qm, _mm256_set1_epi64x(1)), _mm256_set1_epi64x(1)));
  const __m256d neg_sin = _mm256_castsi256_pd(
      _mm256_cmpeq_epi64(_mm256_and_si256(qm, _mm256_set1_epi64x(2)), _mm256_set1_epi64x(2)));
  const __m256i q1 = _mm256_and_si256(_mm256_add_epi64(qm, _mm256_set1_epi64x(1)), three);
  const __m256d neg_cos = _mm256_castsi256_pd(
      _mm256_cmpeq_epi64(_mm256_and_si256(q1, _mm256_set1_epi64x(2)), _mm256_set1_epi64x(2)));
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d sv = _mm256_blendv_pd(s, c, swap);
  __m256d cv = _mm256_blendv_pd(c, s, swap);
  sv = _mm256_xor_pd(sv, _mm256_and_pd(neg_sin, sign));
  cv = _mm256_xor_pd(cv, _mm256_and_pd(neg_cos, sign));
  *sin_out = sv;
  *cos_out = cv;
}

// logf(LogArg(k)), sinf/cosf(TrigArg(j)) for 4 lanes, before exception patching.
inline void LogSinCos4(__m128i k, __m128i j, __m128* log_out, __m128* sin_out, __m128* cos_out) {
  __m256d u = _mm256_mul_pd(_mm256_cvtepi32_pd(k), _mm256_set1_pd(0x1p-23));
  const __m256d zero =
      _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmpeq_epi32(k, _mm_setzero_si128())));
  u = _mm256_blendv_pd(u, _mm256_set1_pd(static_cast<double>(1.0e-7f)), zero);
  *log_out = _mm256_cvtpd_ps(Log4(u));
  const __m256d prod = _mm256_mul_pd(_mm256_set1_pd(2.0 * M_PI),
                                     _mm256_mul_pd(_mm256_cvtepi32_pd(j), _mm256_set1_pd(0x1p-23)));
  const __m256d v = _mm256_cvtps_pd(_mm256_cvtpd_ps(prod));
  __m256d s, c;
  SinCos4(v, &s, &c);
  *sin_out = _mm256_cvtpd_ps(s);
  *cos_out = _mm256_cvtpd_ps(c);
}

// AVX-512 twins of Log4/SinCos4/LogSinCos4: the same IEEE operations per lane, 8 lanes.
#define TROUPE_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw")))

TROUPE_AVX512 inline __m512d Log8(__m512d x) {
  const __m512i bits = _mm512_castpd_si512(x);
  const __m512i exp_field = _mm512_srli_epi64(bits, 52);
  __m512d e = _mm512_sub_pd(
      _mm512_castsi512_pd(_mm512_or_si512(exp_field, _mm512_set1_epi64(0x4330000000000000LL))),
      _mm512_set1_pd(4503599627370496.0 + 1023.0));
  __m512d m = _mm512_castsi512_pd(
      _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi64(0x000fffffffffffffLL)),
                      _mm512_set1_epi64(0x3ff0000000000000LL)));
  const __mmask8 big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.4142135623730951), _CMP_GT_OQ);
  m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
  e = _mm512_mask_add_pd(e, big, e, _mm512_set1_pd(1.0));
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d f = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
  const __m512d s = _mm512_mul_pd(f, f);
  __m512d p = _mm512_set1_pd(1.0 / 15.0);
  for (double c : {1.0 / 13, 1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0}) {
    p = _mm512_fmadd_pd(p, s, _mm512_set1_pd(c));
  }
  const __m512d log_m = _mm512_mul_pd(_mm512_add_pd(f, f), p);
  return _mm512_fmadd_pd(e, _mm512_set1_pd(6.93147180369123816490e-01),
                         _mm512_fmadd_pd(e, _mm512_set1_pd(1.90821492927058770002e-10), log_m));
}

TROUPE_AVX512 inline void SinCos8(__m512d x, __m512d* sin_out, __m512d* cos_out) {
  const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(0.63661977236758134308)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512d r =
      _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(n, _mm512_set1_pd(1.57079632673412561417e+00))),
                    _mm512_mul_pd(n, _mm512_set1_pd(6.07710050650619224932e-11)));
  const __m512d neg_r2 = _mm512_sub_pd(_mm512_setzero_pd(), _mm512_mul_pd(r, r));
  __m512d sp = _mm512_set1_pd(kInvFact[15]);
  for (int k = 13; k >= 1; k -= 2) sp = _mm512_fmadd_pd(sp, neg_r2, _mm512_set1_pd(kInvFact[k]));
  __m512d cp = _mm512_set1_pd(kInvFact[16]);
  for (int k = 14; k >= 0; k -= 2) cp = _mm512_fmadd_pd(cp, neg_r2, _mm512_set1_pd(kInvFact[k]));
  const __m512d s = _mm512_mul_pd(r, sp);
  const __m512d c = cp;
  const __m512i q = _mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(n));
  const __mmask8 swap = _mm512_test_epi64_mask(q, _mm512_set1_epi64(1));
  const __mmask8 neg_sin = _mm512_test_epi64_mask(q, _mm512_set1_epi64(2));
  const __mmask8 neg_cos =
      _mm512_test_epi64_mask(_mm512_add_epi64(q, _mm512_set1_epi64(1)), _mm512_set1_epi64(2));
  const __m512d sign = _mm512_set1_pd(-0.0);
  const __m512d sv = _mm512_mask_blend_pd(swap, s, c);
  const __m512d cv = _mm512_mask_blend_pd(swap, c, s);
  *sin_out = _mm512_mask_xor_pd(sv, neg_sin, sv, sign);
  *cos_out = _mm512_mask_xor_pd(cv, neg_cos, cv, sign);
}

TROUPE_AVX512 inline void LogSinCos8(__m256i k, __m256i j, __m256* log_out, __m256* sin_out,
                                     __m256* cos_out) {
  __m512d u = _mm512_mul_pd(_mm512_cvtepi32_pd(k), _mm512_set1_pd(0x1p-23));
  const __mmask8 zero = _mm256_cmpeq_epi32_mask(k, _mm256_setzero_si256());
  u = _mm512_mask_blend_pd(zero, u, _mm512_set1_pd(static_cast<double>(1.0e-7f)));
  *log_out = _mm512_cvtpd_ps(Log8(u));
  const __m512d prod = _mm512_mul_pd(_mm512_set1_pd(2.0 * M_PI),
                                     _mm512_mul_pd(_mm512_cvtepi32_pd(j), _mm512_set1_pd(0x1p-23)));
  const __m512d v = _mm512_cvtps_pd(_mm512_cvtpd_ps(prod));
  __m512d s, c;
  SinCos8(v, &s, &c);
  *sin_out = _mm512_cvtpd_ps(s);
  *cos_out = _mm512_cvtpd_ps(c);
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  return has;
}

// 8 pairs: words w[0..15] -> out[0..15], patching exception lanes with the scalar calls.
TROUPE_AVX512 void Pairs8(const uint32_t* w, const uint64_t* log_bits, const uint64_t* trig_bits,
                          float* out) {
  const __m512i words = _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15),
      _mm512_loadu_si512(w));
  const __m256i mask = _mm256_set1_epi32(0x7fffff);
  const __m256i k = _mm256_and_si256(_mm512_castsi512_si256(words), mask);
  const __m256i j = _mm256_and_si256(_mm512_extracti64x4_epi64(words, 1), mask);
  __m256 lv, sv, cv;
  LogSinCos8(k, j, &lv, &sv, &cv);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i log_hit = _mm256_and_si256(
      _mm256_i32gather_epi32(reinterpret_cast<const int*>(log_bits), _mm256_srli_epi32(k, 5), 4),
      _mm256_sllv_epi32(one, _mm256_and_si256(k, _mm256_set1_epi32(31))));
  const __m256i trig_hit = _mm256_and_si256(
      _mm256_i32gather_epi32(reinterpret_cast<const int*>(trig_bits), _mm256_srli_epi32(j, 5), 4),
      _mm256_sllv_epi32(one, _mm256_and_si256(j, _mm256_set1_epi32(31))));
  const __m256i any = _mm256_or_si256(log_hit, trig_hit);
  if (!_mm256_testz_si256(any, any)) {
    alignas(32) uint32_t ks[8], js[8], lh[8], th[8];
    alignas(32) float l[8], s[8], c[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(ks), k);
    _mm256_store_si256(reinterpret_cast<__m256i*>(js), j);
    _mm256_store_si256(reinterpret_cast<__m256i*>(lh), log_hit);
    _mm256_store_si256(reinterpret_cast<__m256i*>(th), trig_hit);
    _mm256_store_ps(l, lv);
    _mm256_store_ps(s, sv);
    _mm256_store_ps(c, cv);
    for (int t = 0; t < 8; ++t) {
      if (lh[t] != 0) l[t] = std::log(LogArg(ks[t]));
      if (th[t] != 0) ::sincosf(TrigArg(js[t]), &s[t], &c[t]);
    }
    lv = _mm256_load_ps(l);
    sv = _mm256_load_ps(s);
    cv = _mm256_load_ps(c);
  }
  const __m256 u2 = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), lv));
  const __m256 o0 = _mm256_mul_ps(sv, u2);
  const __m256 o1 = _mm256_mul_ps(cv, u2);
  const __m256 lo = _mm256_unpacklo_ps(o0, o1);  // pairs 0,1 | 4,5
  const __m256 hi = _mm256_unpackhi_ps(o0, o1);  // pairs 2,3 | 6,7
  _mm256_storeu_ps(out, _mm256_permute2f128_ps(lo, hi, 0x20));
  _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

// The AVX-512 path's values for 8 consecutive arguments (for the exception bitmaps).
TROUPE_AVX512 void Values8(uint32_t base, float* l, float* s, float* c) {
  const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(base)),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256 lv, sv, cv;
  LogSinCos8(idx, idx, &lv, &sv, &cv);
  _mm256_storeu_ps(l, lv);
  _mm256_storeu_ps(s, sv);
  _mm256_storeu_ps(c, cv);
}

#endif  // __AVX2__

}  // namespace

const FastBoxMuller* FastBoxMuller::Get(ThreadPool* pool) {
#if defined(__AVX2__)
  static FastBoxMuller* instance = nullptr;
  static std::once_flag once;
  std::call_once(once, [pool] {
    if (!__builtin_cpu_supports("avx2")) return;
    auto* fbm = new FastBoxMuller();
    fbm->Build(pool);
    instance = fbm;
  });
  return instance;
#else
  (void)pool;
  return nullptr;
#endif
}

void FastBoxMuller::Build(ThreadPool* pool) {
#if defined(__AVX2__)
  const int64_t words = kArgs / 64;
  log_exception_bits_.assign(static_cast<size_t>(words), 0);
  trig_exception_bits_.assign(static_cast<size_t>(words), 0);
  auto body = [this](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      uint64_t log_bits = 0, trig_bits = 0;
      for (int b = 0; b < 64; b += 8) {
        const uint32_t base = static_cast<uint32_t>(w * 64 + b);
        // The values the fast path will compute for these arguments (same code path).
        alignas(32) float l[8], s[8], c[8];
        if (HasAvx512()) {
          Values8(base, l, s, c);
        } else {
          for (int h = 0; h < 8; h += 4) {
            const __m128i idx = _mm_add_epi32(_mm_set1_epi32(static_cast<int>(base + h)),
                                              _mm_setr_epi32(0, 1, 2, 3));
            __m128 lv, sv, cv;
            LogSinCos4(idx, idx, &lv, &sv, &cv);
            _mm_store_ps(l + h, lv);
            _mm_store_ps(s + h, sv);
            _mm_store_ps(c + h, cv);
          }
        }
        for (int i = 0; i < 8; ++i) {
          const float want_log = std::log(LogArg(base + i));
          float want_sin, want_cos;
          ::sincosf(TrigArg(base + i), &want_sin, &want_cos);
          if (std::memcmp(&want_log, &l[i], 4) != 0) log_bits |= uint64_t{1} << (b + i);
          if (std::memcmp(&want_sin, &s[i], 4) != 0 || std::memcmp(&want_cos, &c[i], 4) != 0) {
            trig_bits |= uint64_t{1} << (b + i);
          }
        }
      }
      log_exception_bits_[static_cast<size_t>(w)] = log_bits;
      trig_exception_bits_[static_cast<size_t>(w)] = trig_bits;
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(words, 1024, body);
  } else {
    body(0, words);
  }
  for (uint64_t v : log_exception_bits_) log_exceptions_ += __builtin_popcountll(v);
  for (uint64_t v : trig_exception_bits_) trig_exceptions_ += __builtin_popcountll(v);
#else
  (void)pool;
#endif
}

void FastBoxMuller::Pairs(const uint32_t* w, int64_t n_pairs, float* out) const {
  int64_t i = 0;
#if defined(__AVX2__)
  if (HasAvx512()) {
    for (; i + 8 <= n_pairs; i += 8) {
      Pairs8(w + 2 * i, log_exception_bits_.data(), trig_exception_bits_.data(), out + 2 * i);
    }
  }
  const __m256i deinterleave = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m128i mask = _mm_set1_epi32(0x7fffff);
  for (; i + 4 <= n_pairs; i += 4) {
    const __m256i words = _mm256_permutevar8x32_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2 * i)), deinterleave);
    const __m128i k = _mm_and_si128(_mm256_castsi256_si128(words), mask);
    const __m128i j = _mm_and_si128(_mm256_extracti128_si256(words, 1), mask);
    __m128 lv, sv, cv;
    LogSinCos4(k, j, &lv, &sv, &cv);
    // Exception bits for the 4 log and 4 trig arguments, gathered from the bitmaps.
    const __m128i one = _mm_set1_epi32(1);
    const __m128i log_hit =
        _mm_and_si128(_mm_i32gather_epi32(reinterpret_cast<const int*>(log_exception_bits_.data()),
                                          _mm_srli_epi32(k, 5), 4),
                      _mm_sllv_epi32(one, _mm_and_si128(k, _mm_set1_epi32(31))));
    const __m128i trig_hit =
        _mm_and_si128(_mm_i32gather_epi32(reinterpret_cast<const int*>(trig_exception_bits_.data()),
                                          _mm_srli_epi32(j, 5), 4),
                      _mm_sllv_epi32(one, _mm_and_si128(j, _mm_set1_epi32(31))));
    if (!_mm_testz_si128(_mm_or_si128(log_hit, trig_hit), _mm_or_si128(log_hit, trig_hit))) {
      alignas(16) uint32_t ks[4], js[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(ks), k);
      _mm_store_si128(reinterpret_cast<__m128i*>(js), j);
      alignas(16) float l[4], s[4], c[4];
      _mm_store_ps(l, lv);
      _mm_store_ps(s, sv);
      _mm_store_ps(c, cv);
      for (int t = 0; t < 4; ++t) {
        if (TestBit(log_exception_bits_, ks[t])) l[t] = std::log(LogArg(ks[t]));
        if (TestBit(trig_exception_bits_, js[t])) ::sincosf(TrigArg(js[t]), &s[t], &c[t]);
      }
      lv = _mm_load_ps(l);
      sv = _mm_load_ps(s);
      cv = _mm_load_ps(c);
    }
    const __m128 u2 = _mm_sqrt_ps(_mm_mul_ps(_mm_set1_ps(-2.0f), lv));
    const __m128 o0 = _mm_mul_ps(sv, u2);
    const __m128 o1 = _mm_mul_ps(cv, u2);
    _mm_storeu_ps(out + 2 * i, _mm_unpacklo_ps(o0, o1));
    _mm_storeu_ps(out + 2 * i + 4, _mm_unpackhi_ps(o0, o1));
  }
#endif
  for (; i < n_pairs; ++i)
    tf_bits::BoxMullerFloat(w[2 * i], w[2 * i + 1], &out[2 * i], &out[2 * i + 1]);
}

}  // namespace troupe::random
