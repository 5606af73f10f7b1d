// Internal: single-threaded dense matrix product for the CPU kernels (MatMul, Conv2D's
// im2col products): C[m, n] = op(A) · op(B), row-major with leading dimensions, where op
// transposes when asked. float and double.
//
// float runs the packed GEMM of kernels/gemm_packed.h (AVX-512 when simd::AllowAvx512() and
// the CPU has it, else AVX2): every element is the sequential fmaf chain over k, so the bits
// do not depend on the path, the blocking or how callers split rows across threads. double runs
// the default build's Eigen GEMM, whose per-element sums also run over k in one blocked order
// for a given shape, so its results do not depend on how callers split rows either.
#pragma once

#include <cstdint>

namespace troupe {
namespace kernels {

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc);

}  // namespace kernels
}  // namespace troupe
