// The AVX-512 micro-kernels of kernels/gemm_packed.h (this file alone gets -mavx512* in
// kernels/CMakeLists.txt); the driver calls them only after HaveGemmPackedAvx512() checked the
// CPU. As in gemm_avx512.cc, nothing with vague linkage may be shared with the default build:
// this file includes only <immintrin.h> (always-inline intrinsics), <cstdint> and the
// plain-C++ gemm_packed.h, and its templates live in an anonymous namespace.
#include <cstdint>

#include "kernels/gemm_packed.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define TROUPE_GEMM_PACKED_AVX512 1
#else
#define TROUPE_GEMM_PACKED_AVX512 0
#endif

namespace troupe {
namespace kernels {
namespace gemm_packed {

#if TROUPE_GEMM_PACKED_AVX512

namespace {
struct Vec {
  using T = __m512;
  static constexpr int kLanes = 16;
  static T Load(const float* p) { return _mm512_loadu_ps(p); }
  static void Store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T Zero() { return _mm512_setzero_ps(); }
  static T Splat(float s) { return _mm512_set1_ps(s); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
};
}  // namespace

#include "kernels/gemm_packed_microkernel.inc"

// Measured on a Zen 5 core (bench/gemm_bench.cc): 6 × 32 (12 accumulators) is the fastest
// tile where n fills it; 7 × 48 wins where 48-wide panels waste fewer columns (n = 48, 144);
// narrow products (n ≤ 16, 16-channel convolutions) take 14 × 16.
KernelInfo Avx512Kernel(int64_t n) {
  if (n <= 16) {
    return {MicroKernelT<14, 1, false>, MicroKernelT<14, 1, true>, 14, 16, 256, 14 * 32, 4096,
            PartialRows<14, 1>};
  }
  if ((n + 47) / 48 * 48 < (n + 31) / 32 * 32) {
    return {MicroKernelT<7, 3, false>, MicroKernelT<7, 3, true>, 7, 48, 256, 7 * 32, 4032,
            PartialRows<7, 3>};
  }
  return {MicroKernelT<6, 2, false>, MicroKernelT<6, 2, true>, 6, 32, 256, 6 * 32, 4096,
          PartialRows<6, 2>};
}

#else

KernelInfo Avx512Kernel(int64_t) { return {}; }

#endif

}  // namespace gemm_packed
}  // namespace kernels
}  // namespace troupe
