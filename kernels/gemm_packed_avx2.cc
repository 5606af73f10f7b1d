// The AVX2+FMA micro-kernel of kernels/gemm_packed.h (this file gets -mavx2 -mfma in
// kernels/CMakeLists.txt, so it builds even where the default level lacks AVX2); the driver
// calls it only after HaveGemmPackedAvx2() checked the CPU. Same isolation rules as
// gemm_packed_avx512.cc: only <immintrin.h>, <cstdint> and gemm_packed.h are included.
#include <cstdint>

#include "kernels/gemm_packed.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TROUPE_GEMM_PACKED_AVX2 1
#else
#define TROUPE_GEMM_PACKED_AVX2 0
#endif

namespace troupe {
namespace kernels {
namespace gemm_packed {

#if TROUPE_GEMM_PACKED_AVX2

namespace {
struct Vec {
  using T = __m256;
  static constexpr int kLanes = 8;
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T Zero() { return _mm256_setzero_ps(); }
  static T Splat(float s) { return _mm256_set1_ps(s); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
};
}  // namespace

#include "kernels/gemm_packed_microkernel.inc"

// 6 × 16 (12 of the 16 ymm registers accumulate); 12 × 8 for products at most 8 wide.
KernelInfo Avx2Kernel(int64_t n) {
  if (n <= 8)
    return {MicroKernelT<12, 1, false>, MicroKernelT<12, 1, true>, 12, 8, 256, 12 * 24, 4096,
            PartialRows<12, 1>};
  return {MicroKernelT<6, 2, false>, MicroKernelT<6, 2, true>, 6, 16, 256, 6 * 48, 4096,
          PartialRows<6, 2>};
}

#else

KernelInfo Avx2Kernel(int64_t) { return {}; }

#endif

}  // namespace gemm_packed
}  // namespace kernels
}  // namespace troupe
