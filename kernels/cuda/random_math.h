// Bit-exact float math for the GPU random kernels, compiled for host and device: the CPU's
// normals use glibc's logf/sincosf/sinf/cosf (TF's BoxMullerFloat, XLA's Box-Muller) and XLA
// CPU's own Cephes log / Giles erfinv (xla_cpu_math.cc). CUDA's logf/sinf are not bit-equal to
// either, so the algorithms are ported here step by step.
//
// glibc (2.27+, x86-64) ships each of logf and sinf/cosf/sincosf twice, selected at load time:
// a baseline build and one compiled with -mfma where GCC fuses a*b+c. kFma picks which one is
// reproduced (MulAdd fuses only then); the caller probes the host's glibc to choose
// (random_glibc_probe.cc). Every other operation is a plain IEEE double/float op, so this file
// must be compiled WITHOUT contraction (nvcc -fmad=false, g++ -ffp-contract=off).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TROUPE_HD __host__ __device__ __forceinline__
#else
#define TROUPE_HD inline
#endif

namespace troupe::random::gpu_math {

TROUPE_HD uint32_t AsUint(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
TROUPE_HD float AsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

template <bool kFma>
TROUPE_HD double MulAdd(double a, double b, double c) {
  if constexpr (kFma) {
    return fma(a, b, c);
  } else {
    return a * b + c;
  }
}

// --- glibc logf (sysdeps/ieee754/flt-32/e_logf.c, LOGF_TABLE_BITS 4) -------------------------

struct LogfEntry {
  double invc, logc;
};

TROUPE_HD LogfEntry LogfTable(int i) {
  // Spelled as a switch so host and device share it without a __constant__ table.
  switch (i) {
    case 0:
      return {0x1.661ec79f8f3bep+0, -0x1.57bf7808caadep-2};
    case 1:
      return {0x1.571ed4aaf883dp+0, -0x1.2bef0a7c06ddbp-2};
    case 2:
      return {0x1.49539f0f010bp+0, -0x1.01eae7f513a67p-2};
    case 3:
      return {0x1.3c995b0b80385p+0, -0x1.b31d8a68224e9p-3};
    case 4:
      return {0x1.30d190c8864a5p+0, -0x1.6574f0ac07758p-3};
    case 5:
      return {0x1.25e227b0b8eap+0, -0x1.1aa2bc79c81p-3};
    case 6:
      return {0x1.1bb4a4a1a343fp+0, -0x1.a4e76ce8c0e5ep-4};
    case 7:
      return {0x1.12358f08ae5bap+0, -0x1.1973c5a611cccp-4};
    case 8:
      return {0x1.0953f419900a7p+0, -0x1.252f438e10c1ep-5};
    case 9:
      return {0x1p+0, 0x0p+0};
    case 10:
      return {0x1.e608cfd9a47acp-1, 0x1.aa5aa5df25984p-5};
    case 11:
      return {0x1.ca4b31f026aap-1, 0x1.c5e53aa362eb4p-4};
    case 12:
      return {0x1.b2036576afce6p-1, 0x1.526e57720db08p-3};
    case 13:
      return {0x1.9c2d163a1aa2dp-1, 0x1.bc2860d22477p-3};
    case 14:
      return {0x1.886e6037841edp-1, 0x1.1058bc8a07ee1p-2};
    default:
      return {0x1.767dcf5534862p-1, 0x1.4043057b6ee09p-2};
  }
}

// logf for finite x > 0 (the only arguments Box-Muller passes).
template <bool kFma>
TROUPE_HD float GlibcLogf(float x) {
  constexpr double kLn2 = 0x1.62e42fefa39efp-1;
  constexpr double kA0 = -0x1.00ea348b88334p-2, kA1 = 0x1.5575b0be00b6ap-2,
                   kA2 = -0x1.ffffef20a4123p-2;
  constexpr uint32_t kOff = 0x3f330000;
  uint32_t ix = AsUint(x);
  if (ix == 0x3f800000) return 0.0f;
  if (ix < 0x00800000) {  // subnormal: normalise
    ix = AsUint(x * 0x1p23f);
    ix -= 23u << 23;
  }
  const uint32_t tmp = ix - kOff;
  const int i = static_cast<int>((tmp >> (23 - 4)) % 16);
  const int k = static_cast<int32_t>(tmp) >> 23;
  const uint32_t iz = ix - (tmp & (0x1ffu << 23));
  const LogfEntry e = LogfTable(i);
  const double z = static_cast<double>(AsFloat(iz));
  const double r = MulAdd<kFma>(z, e.invc, -1.0);
  const double y0 = MulAdd<kFma>(static_cast<double>(k), kLn2, e.logc);
  const double r2 = r * r;
  double y = MulAdd<kFma>(kA1, r, kA2);
  y = MulAdd<kFma>(kA0, r2, y);
  y = MulAdd<kFma>(y, r2, y0 + r);
  return static_cast<float>(y);
}

// --- glibc sinf/cosf/sincosf (s_sincosf.h, sincosf_poly.h), |y| < 120 ---------------------

struct SincosfPoly {
  double c0, c1, c2, c3, c4;  // cosine polynomial (negated in the second table)
};
TROUPE_HD SincosfPoly SincosfCos(bool negated) {
  if (!negated) {
    return {0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10,
            0x1.99343027bf8c3p-16};
  }
  return {-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10,
          -0x1.99343027bf8c3p-16};
}
constexpr double kSincosfS1 = -0x1.555545995a603p-3;
constexpr double kSincosfS2 = 0x1.1107605230bc4p-7;
constexpr double kSincosfS3 = -0x1.994eb3774cf24p-13;

TROUPE_HD uint32_t AbsTop12(float x) { return (AsUint(x) >> 20) & 0x7ff; }

// The sine polynomial (sin_branch) or the cosine one, as sinf_poly / sincosf_poly compute them.
template <bool kFma>
TROUPE_HD double SinPoly(double x, double x2) {
  const double x3 = x2 * x;
  const double s1 = MulAdd<kFma>(x2, kSincosfS3, kSincosfS2);
  const double x5 = x3 * x2;
  const double s = MulAdd<kFma>(x3, kSincosfS1, x);
  return MulAdd<kFma>(x5, s1, s);
}
template <bool kFma>
TROUPE_HD double CosPoly(double x2, const SincosfPoly& p) {
  const double x4 = x2 * x2;
  const double c2 = MulAdd<kFma>(x2, p.c4, p.c3);
  const double c1 = MulAdd<kFma>(x2, p.c1, p.c0);
  const double x6 = x4 * x2;
  const double c = MulAdd<kFma>(x4, p.c2, c1);
  return MulAdd<kFma>(x6, c2, c);
}

// Both results; sinf(y) and cosf(y) are the same evaluations (checked on the host).
template <bool kFma>
TROUPE_HD void GlibcSincosf(float y, float* sinp, float* cosp) {
  double x = y;
  const uint32_t top = AbsTop12(y);
  if (top < AbsTop12(static_cast<float>(0x1.921FB54442D18p-1))) {  // abstop12(pio4)
    if (top < AbsTop12(0x1p-12f)) {
      *sinp = y;
      *cosp = 1.0f;
      return;
    }
    const double x2 = x * x;
    *sinp = static_cast<float>(SinPoly<kFma>(x, x2));
    *cosp = static_cast<float>(CosPoly<kFma>(x2, SincosfCos(false)));
    return;
  }
  // reduce_fast (TOINT_INTRINSICS == 0 on x86-64): hpi_inv prescaled by 2^24.
  constexpr double kHpiInv = 0x1.45F306DC9C883p+23;
  constexpr double kHpi = 0x1.921FB54442D18p0;
  const double r = x * kHpiInv;
  const int n = (static_cast<int32_t>(r) + 0x800000) >> 24;
  x = MulAdd<kFma>(-static_cast<double>(n), kHpi, x);
  const double s = ((n & 3) == 0 || (n & 3) == 3) ? 1.0 : -1.0;
  const SincosfPoly p = SincosfCos((n & 2) != 0);
  const double xs = x * s, x2 = x * x;
  const float sin_poly = static_cast<float>(SinPoly<kFma>(xs, x2));
  const float cos_poly = static_cast<float>(CosPoly<kFma>(x2, p));
  if (n & 1) {
    *sinp = cos_poly;
    *cosp = sin_poly;
  } else {
    *sinp = sin_poly;
    *cosp = cos_poly;
  }
}

// --- TF's BoxMullerFloat ---------------------------------------------------------------------

TROUPE_HD float Uint32ToFloat(uint32_t x) { return AsFloat((127u << 23) | (x & 0x7fffffu)) - 1.0f; }

// kFmaLog / kFmaTrig: which glibc build of logf and of sincosf the host uses.
template <bool kFmaLog, bool kFmaTrig>
TROUPE_HD void BoxMullerFloat(uint32_t x0, uint32_t x1, float* f0, float* f1) {
  constexpr float kEpsilon = 1.0e-7f;
  float u1 = Uint32ToFloat(x0);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const float v1 = static_cast<float>(2.0 * M_PI * static_cast<double>(Uint32ToFloat(x1)));
  const float u2 = sqrtf(-2.0f * GlibcLogf<kFmaLog>(u1));
  float s, c;
  GlibcSincosf<kFmaTrig>(v1, &s, &c);
  *f0 = s * u2;
  *f1 = c * u2;
}

// --- XLA CPU math (kernels/random/xla_cpu_math.cc), fma where XLA's LLVM fuses -----------------

TROUPE_HD float XlaLogF32(float input) {
  float x = fmaxf(input, AsFloat(0x00800000u));
  const int32_t exponent = static_cast<int32_t>(AsUint(x) >> 23) - 0x7f;
  x = AsFloat((AsUint(x) & ~0x7f800000u) | AsUint(0.5f));
  float e = 1.0f + static_cast<float>(exponent);
  const bool below = x < 0.707106781186547524f;
  const float shift = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + shift;
  const float x2 = x * x;
  const float x3 = x2 * x;
  float y = fmaf(x, 7.0376836292E-2f, -1.1514610310E-1f);
  float y1 = fmaf(x, -1.2420140846E-1f, +1.4249322787E-1f);
  float y2 = fmaf(x, +2.0000714765E-1f, -2.4999993993E-1f);
  y = fmaf(y, x, 1.1676998740E-1f);
  y1 = fmaf(y1, x, -1.6668057665E-1f);
  y2 = fmaf(y2, x, +3.3333331174E-1f);
  y = fmaf(y, x3, y1);
  y = fmaf(y, x3, y2);
  y = fmaf(y, x3, -2.12194440e-4f * e);
  float r = fmaf(x2, -0.5f, x);
  r = r + y;
  return fmaf(e, 0.693359375f, r);
}

TROUPE_HD float XlaLog1pF32(float x) {
  if (!(fabsf(x) < 0.41421356237309504880f)) return XlaLogF32(x + 1.0f);
  // The Cephes coefficients, rounded to float as xla_cpu_math.cc does.
  const float den[7] = {1.0f,
                        static_cast<float>(1.5062909083469192043167E1),
                        static_cast<float>(8.3047565967967209469434E1),
                        static_cast<float>(2.2176239823732856465394E2),
                        static_cast<float>(3.0909872225312059774938E2),
                        static_cast<float>(2.1642788614495947685003E2),
                        static_cast<float>(6.0118660497603843919306E1)};
  const float num[7] = {static_cast<float>(4.5270000862445199635215E-5),
                        static_cast<float>(4.9854102823193375972212E-1),
                        static_cast<float>(6.5787325942061044846969E0),
                        static_cast<float>(2.9911919328553073277375E1),
                        static_cast<float>(6.0949667980987787057556E1),
                        static_cast<float>(5.7112963590585538103336E1),
                        static_cast<float>(2.0039553499201281259648E1)};
  const float x2 = x * x;
  float d = 0.0f, n = 0.0f;
  for (int i = 0; i < 7; ++i) {
    d = fmaf(d, x, den[i]);
    n = fmaf(n, x, num[i]);
  }
  const float small = fmaf(-0.5f, x2, (x * x2) * (n / d));
  return x + small;
}

TROUPE_HD float XlaErfInvF32(float x) {
  const float lt5[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                        -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                        -0.00417768164f,  0.246640727f,    1.50140941f};
  const float ge5[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                        -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                        0.00943887047f,   1.00167406f,     2.83297682f};
  float w = -XlaLog1pF32(-x * x);
  const bool lt = w < 5.0f;
  const float* c = lt ? lt5 : ge5;
  w = lt ? w - 2.5f : sqrtf(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = fmaf(p, w, c[i]);
  if (fabsf(x) == 1.0f) return x * 3.40282346638528859812e+38f;
  return p * x;
}

// XLA's truncated normal transform for float32; alpha_cdf and z are XLA's folded constants
// (computed on the host, see random_glibc_probe.cc).
TROUPE_HD float XlaTruncatedNormalF32(float uniform, float alpha_cdf, float z) {
  const float p = fmaf(z, uniform, alpha_cdf);
  constexpr float kEps = 1.1920928955078125e-7f;
  float v = 2.0f * p - 1.0f;
  v = fminf(fmaxf(v, -1.0f + kEps), 1.0f - kEps);
  const float x = 1.41421353816986083984f /* (float)sqrt(2.0) */ * XlaErfInvF32(v);
  return fminf(fmaxf(x, -2.0f), 2.0f);
}

}  // namespace troupe::random::gpu_math
