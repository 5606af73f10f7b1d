// Bulk Philox / ThreeFry generation. The permutations run 8 counters at a time in AVX2 registers
// (structure of arrays), then Philox words are transposed back to TF's block order. A scalar
// path handles tails, counter words that would carry inside a vector, and non-AVX2 builds.
#include <cstring>

#include "kernels/random/philox_blocks.h"
#include "kernels/random/threefry.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace troupe::random {
namespace {

#if defined(__AVX2__)
inline void MulHiLo(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// 8 Philox blocks whose counters are c0 + 0..7 (no carry out of c0 inside the vector), written
// as 32 words in block order.
inline void Philox8(const Philox4x32::Block& c, const Philox4x32::Key& key, uint32_t* out) {
  __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(c[0])),
                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i c1 = _mm256_set1_epi32(static_cast<int>(c[1]));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(c[2]));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(c[3]));
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kPhiloxM1));
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    __m256i hi0, lo0, hi1, lo1;
    MulHiLo(c0, m0, hi0, lo0);
    MulHiLo(c2, m1, hi1, lo1);
    const __m256i n0 =
        _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i n2 =
        _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  // Transpose 4 words x 8 blocks into block order.
  const __m256i t0 = _mm256_unpacklo_epi32(c0, c1);
  const __m256i t1 = _mm256_unpackhi_epi32(c0, c1);
  const __m256i t2 = _mm256_unpacklo_epi32(c2, c3);
  const __m256i t3 = _mm256_unpackhi_epi32(c2, c3);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2);  // blocks 0 | 4
  const __m256i u1 = _mm256_unpackhi_epi64(t0, t2);  // blocks 1 | 5
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3);  // blocks 2 | 6
  const __m256i u3 = _mm256_unpackhi_epi64(t1, t3);  // blocks 3 | 7
  auto* o = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(u0, u1, 0x20));
  _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
  _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
  _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
}

template <int R>
inline __m256i Rotl(__m256i v) {
  return _mm256_or_si256(_mm256_slli_epi32(v, R), _mm256_srli_epi32(v, 32 - R));
}

template <int R0, int R1, int R2, int R3>
inline void FourRounds(__m256i& x0, __m256i& x1) {
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(Rotl<R0>(x1), x0);
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(Rotl<R1>(x1), x0);
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(Rotl<R2>(x1), x0);
  x0 = _mm256_add_epi32(x0, x1);
  x1 = _mm256_xor_si256(Rotl<R3>(x1), x0);
}

// ThreeFry of 8 inputs start + 0..7 (low word does not wrap inside the vector).
inline void ThreeFry8(uint64_t start, uint32_t k0, uint32_t k1, uint32_t* out0, uint32_t* out1) {
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(start))),
                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i x1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(start >> 32)));
  auto add = [](__m256i v, uint32_t c) {
    return _mm256_add_epi32(v, _mm256_set1_epi32(static_cast<int>(c)));
  };
  x0 = add(x0, ks[0]);
  x1 = add(x1, ks[1]);
  FourRounds<13, 15, 26, 6>(x0, x1);
  x0 = add(x0, ks[1]);
  x1 = add(x1, ks[2] + 1);
  FourRounds<17, 29, 16, 24>(x0, x1);
  x0 = add(x0, ks[2]);
  x1 = add(x1, ks[0] + 2);
  FourRounds<13, 15, 26, 6>(x0, x1);
  x0 = add(x0, ks[0]);
  x1 = add(x1, ks[1] + 3);
  FourRounds<17, 29, 16, 24>(x0, x1);
  x0 = add(x0, ks[1]);
  x1 = add(x1, ks[2] + 4);
  FourRounds<13, 15, 26, 6>(x0, x1);
  x0 = add(x0, ks[2]);
  x1 = add(x1, ks[0] + 5);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out0), x0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out1), x1);
}

// AVX-512: 16 blocks per call, same rounds; the result is transposed as two AVX2 halves.
#define TROUPE_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw")))

TROUPE_AVX512 inline void MulHiLo16(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
}

TROUPE_AVX512 inline void Transpose8(__m256i c0, __m256i c1, __m256i c2, __m256i c3,
                                     uint32_t* out) {
  const __m256i t0 = _mm256_unpacklo_epi32(c0, c1);
  const __m256i t1 = _mm256_unpackhi_epi32(c0, c1);
  const __m256i t2 = _mm256_unpacklo_epi32(c2, c3);
  const __m256i t3 = _mm256_unpackhi_epi32(c2, c3);
  const __m256i u0 = _mm256_unpacklo_epi64(t0, t2);
  const __m256i u1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi64(t1, t3);
  const __m256i u3 = _mm256_unpackhi_epi64(t1, t3);
  auto* o = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(u0, u1, 0x20));
  _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
  _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
  _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
}

TROUPE_AVX512 void Philox16(const Philox4x32::Block& c, const Philox4x32::Key& key, uint32_t* out) {
  __m512i c0 =
      _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(c[0])),
                       _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m512i c1 = _mm512_set1_epi32(static_cast<int>(c[1]));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(c[2]));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(c[3]));
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(kPhiloxM1));
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    __m512i hi0, lo0, hi1, lo1;
    MulHiLo16(c0, m0, hi0, lo0);
    MulHiLo16(c2, m1, hi1, lo1);
    const __m512i n0 =
        _mm512_ternarylogic_epi32(hi1, c1, _mm512_set1_epi32(static_cast<int>(k0)), 0x96);
    const __m512i n2 =
        _mm512_ternarylogic_epi32(hi0, c3, _mm512_set1_epi32(static_cast<int>(k1)), 0x96);
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  Transpose8(_mm512_castsi512_si256(c0), _mm512_castsi512_si256(c1), _mm512_castsi512_si256(c2),
             _mm512_castsi512_si256(c3), out);
  Transpose8(_mm512_extracti64x4_epi64(c0, 1), _mm512_extracti64x4_epi64(c1, 1),
             _mm512_extracti64x4_epi64(c2, 1), _mm512_extracti64x4_epi64(c3, 1), out + 32);
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  return has;
}
#endif  // __AVX2__

}  // namespace

void PhiloxBlocks(const Philox4x32& base, uint64_t first, int64_t n, uint32_t* out) {
  Philox4x32::Block c = base.counter();
  PhiloxAddToCounter(c.data(), first);
  const Philox4x32::Key key = base.key();
  int64_t i = 0;
#if defined(__AVX2__)
  if (HasAvx512()) {
    for (; i + 16 <= n && c[0] <= 0xFFFFFFFFu - 15; i += 16) {
      Philox16(c, key, out + 4 * i);
      PhiloxAddToCounter(c.data(), 16);
    }
  }
  for (; i + 8 <= n; i += 8) {
    if (c[0] <= 0xFFFFFFFFu - 7) {
      Philox8(c, key, out + 4 * i);
      PhiloxAddToCounter(c.data(), 8);
    } else {
      for (int j = 0; j < 8; ++j) {
        const Philox4x32::Block b = Philox4x32::Compute(c, key);
        std::memcpy(out + 4 * (i + j), b.data(), sizeof(b));
        PhiloxAddToCounter(c.data(), 1);
      }
    }
  }
#endif
  for (; i < n; ++i) {
    const Philox4x32::Block b = Philox4x32::Compute(c, key);
    std::memcpy(out + 4 * i, b.data(), sizeof(b));
    PhiloxAddToCounter(c.data(), 1);
  }
}

void ThreeFryWords(uint64_t key, uint64_t start, int64_t n, uint32_t* out0, uint32_t* out1) {
  int64_t i = 0;
#if defined(__AVX2__)
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (; i + 8 <= n; i += 8) {
    const uint64_t s = start + static_cast<uint64_t>(i);
    if (static_cast<uint32_t>(s) <= 0xFFFFFFFFu - 7) {
      ThreeFry8(s, k0, k1, out0 + i, out1 + i);
    } else {
      for (int j = 0; j < 8; ++j) {
        const auto b = ThreeFry2x32::Compute64(s + static_cast<uint64_t>(j), key);
        out0[i + j] = b[0];
        out1[i + j] = b[1];
      }
    }
  }
#endif
  for (; i < n; ++i) {
    const auto b = ThreeFry2x32::Compute64(start + static_cast<uint64_t>(i), key);
    out0[i] = b[0];
    out1[i] = b[1];
  }
}

}  // namespace troupe::random
