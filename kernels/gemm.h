// Internal: single-threaded dense matrix product for the CPU kernels (MatMul, Conv2D's
// im2col products): C[m, n] = op(A) · op(B), row-major with leading dimensions, where op
// transposes when asked. float and double.
//
// Runs the default build's Eigen GEMM (AVX2 on x86-64-v3). With TROUPE_GEMM_AVX512=1 and a CPU
// that has it, float runs Eigen's GEMM built for AVX-512 instead (kernels/gemm_avx512.cc;
// opt-in because its different rounding moves long training runs away from TF's). Either way every
// element's sum runs over k in the same blocked order for a given shape, so results do not depend
// on how callers split rows across threads.
#pragma once

#include <cstdint>

namespace troupe {
namespace kernels {

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc);

// The AVX-512 float GEMM, when this build has one and the CPU runs it (gemm_avx512.cc).
bool HaveGemmAvx512();
void GemmAvx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace kernels
}  // namespace troupe
