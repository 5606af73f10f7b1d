// TensorFlow's CPU-kernel conversions from random words to values (random_distributions.h):
// uniform floats take the LOW mantissa bits of a word, doubles take two words (the earlier word
// gives the high bits), ints use biased modulo, normals use TF's Box-Muller with glibc's
// logf/sincosf. Compile with -ffp-contract=off: a fused multiply-add would change bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/dtype_traits.h"

namespace troupe::random::tf_bits {

inline float Uint32ToFloat(uint32_t x) {
  const uint32_t val = (127u << 23) | (x & 0x7fffffu);
  float f;
  std::memcpy(&f, &val, sizeof(f));
  return f - 1.0f;
}

inline double Uint64ToDouble(uint32_t x0, uint32_t x1) {
  const uint64_t man = (uint64_t{x0 & 0xfffffu} << 32) | x1;
  const uint64_t val = (uint64_t{1023} << 52) | man;
  double d;
  std::memcpy(&d, &val, sizeof(d));
  return d - 1.0;
}

inline half Uint16ToHalf(uint32_t x) {
  const uint16_t val = static_cast<uint16_t>((15u << 10) | (x & 0x3ffu));
  return half(static_cast<float>(Eigen::numext::bit_cast<half>(val)) - 1.0f);
}

inline bfloat16 Uint16ToBFloat16(uint32_t x) {
  const uint16_t val = static_cast<uint16_t>((127u << 7) | (x & 0x7fu));
  return bfloat16(static_cast<float>(Eigen::numext::bit_cast<bfloat16>(val)) - 1.0f);
}

inline uint64_t Join64(uint32_t lo, uint32_t hi) { return uint64_t{lo} | (uint64_t{hi} << 32); }

// TF's BoxMullerFloat on Linux: logf/sqrtf on floats, the angle as (float)(2*pi(double) * u).
inline void BoxMullerFloat(uint32_t x0, uint32_t x1, float* f0, float* f1) {
  constexpr float kEpsilon = 1.0e-7f;
  float u1 = Uint32ToFloat(x0);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const float v1 = static_cast<float>(2.0 * M_PI * static_cast<double>(Uint32ToFloat(x1)));
  const float u2 = std::sqrt(-2.0f * std::log(u1));
  float s, c;
  ::sincosf(v1, &s, &c);
  *f0 = s * u2;
  *f1 = c * u2;
}

inline void BoxMullerDouble(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double* d0,
                            double* d1) {
  constexpr double kEpsilon = 1.0e-7;
  double u1 = Uint64ToDouble(x0, x1);
  if (u1 < kEpsilon) u1 = kEpsilon;
  const double v1 = 2 * M_PI * Uint64ToDouble(x2, x3);
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  double s, c;
  ::sincos(v1, &s, &c);
  *d0 = s * u2;
  *d1 = c * u2;
}

}  // namespace troupe::random::tf_bits
