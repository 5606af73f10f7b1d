// Internal: packed, cache-blocked float32 GEMM (GotoBLAS/BLIS structure): C[m, n] =
// op(A) · op(B), row-major with leading dimensions, op transposing when asked.
//
// Contract (bits): every element of C equals the sequential fused multiply-add chain
//   acc = +0.0f; for p in 0 .. k-1: acc = fmaf(op(A)[i, p], op(B)[p, j], acc); C[i, j] = acc
// whatever the blocking, the micro-kernel shape, the vector width (AVX2, AVX-512 or the scalar
// fallback) and however callers split rows (or columns) across calls. The kc-blocks after the
// first load the partial C into the micro-kernel's accumulators and continue the chain; no
// partial sums are ever added, and no reduction runs across vector lanes. So a scalar std::fma
// loop is an exact reference, and both CPU paths give the same bits.
//
// Structure: for each nc-wide column block and kc-deep slice, B is packed into kc × nr panels
// (zero-padded past n); for each mc-tall row block A is packed into mr × kc panels (zero-padded
// past m); a register-blocked micro-kernel computes one mr × nr tile of C. The four transpose
// combinations differ only in packing; a row block's last, partial panel of rows runs a
// micro-kernel of that many rows, and tiles cut by the right edge of C run on a padded scratch
// tile. Single-threaded and reentrant (scratch is thread-local); callers parallelise over rows.
#pragma once

#include <cstdint>

namespace troupe {
namespace kernels {

// The fastest path this CPU allows: AVX-512 when simd::AllowAvx512() and the CPU has it,
// else AVX2+FMA, else a scalar std::fma kernel. All three give the same bits.
void GemmPacked(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc);

// GemmPacked for an op(A) streamed once from memory (a slice of a tensor far larger than the
// caches, as 1x1 filter gradients read the whole batch): every panel of A is packed, whatever
// lda. Read in place, such a transposed A misses L1 on every micro-kernel call, its rows a
// power-of-2 multiple of 256 bytes apart and so in a few cache sets. The same bits as GemmPacked.
void GemmPackedStreamA(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// C[i, j] += (the fmaf chain above for element (i, j), from +0.0f over all of k): one rounded
// float add per element after the whole chain, so a caller that sums products over consecutive
// blocks of k gets exactly "compute each block's product, then add the blocks in order" without
// a buffer for the block products. Same paths, and the same bits on every path, as GemmPacked.
void GemmPackedAdd(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float* c, int64_t ldc);

// op(B) packed once for many GemmPackedB calls (a convolution's filter, shared by every row
// block and thread): GemmPackedBSize(n, k) floats; GemmPackB packs columns [j0, j1) of op(B)
// (k x n), j0 a multiple of GemmPackBUnit(n), so threads can pack disjoint ranges. GemmPackedB
// then computes C = op(A) . B (the same bits as GemmPacked). Pack and use it under the same
// path (SetGemmPathForTesting must not change in between).
int64_t GemmPackedBSize(int64_t n, int64_t k);
int64_t GemmPackBUnit(int64_t n);
void GemmPackB(bool tb, int64_t n, int64_t k, const float* b, int64_t ldb, int64_t j0, int64_t j1,
               float* dst);
void GemmPackedB(bool ta, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* packed_b, float* c, int64_t ldc);

// Tests only: makes GemmPacked (and so kernels::Gemm<float> and the ops on it) take one path
// (kAuto: the default choice). Paths the CPU lacks fall back as kAuto would.
enum class GemmPath { kAuto, kScalar, kAvx2, kAvx512 };
void SetGemmPathForTesting(GemmPath path);

// One path explicitly (tests and benchmarks). GemmPackedAvx512 needs HaveGemmPackedAvx512()
// and GemmPackedAvx2 needs HaveGemmPackedAvx2(); GemmPackedScalar runs anywhere.
bool HaveGemmPackedAvx2();
bool HaveGemmPackedAvx512();
void GemmPackedAvx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc);
void GemmPackedAvx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
void GemmPackedScalar(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

namespace gemm_packed {

// How a micro-kernel starts and ends: kStore: the chain starts from +0.0f and is stored;
// kContinue: it starts from c (a later kc slice of the same chain); kAdd: it starts from +0.0f
// and c + chain is stored (GemmPackedAdd).
enum class Mode { kStore, kContinue, kAdd };

// Computes one mr × nr tile: c[i * ldc + j] for i < mr, j < nr, from A and the packed B panel
// b[p * nr + j], p < kc. A is a[p * lda + i] (`fn`: a packed panel with lda = mr, or a
// transposed A read in place) or mr rows of a row-major matrix a[i * lda + p] (`fn_rows`); so
// full panels of A are packed only where a transposed A's rows are a multiple of 4 KB apart
// (read in place, they would share a cache set) or the caller streams A (GemmPackedStreamA),
// else only the last, partial one. Every element is a fmaf chain over p in order, started and
// finished as `mode` says.
using MicroKernel = void (*)(int64_t kc, const float* a, int64_t lda, const float* b, float* c,
                             int64_t ldc, Mode mode);

// A micro-kernel with its register tile and cache blocking (kc: depth of a packed slice;
// mc: rows of A packed at once; nc: columns of B packed at once; mc % mr == nc % nr == 0).
// partial(rows), 1 <= rows < mr, where set: `fn` for a packed panel (lda = mr) of only that many
// rows, each element the same chain.
struct KernelInfo {
  MicroKernel fn = nullptr, fn_rows = nullptr;
  int mr = 0, nr = 0;
  int64_t kc = 0, mc = 0, nc = 0;
  MicroKernel (*partial)(int rows) = nullptr;
};

// The micro-kernels each build offers (fn == nullptr when that build has none). `n` is the
// product's column count: narrow products may get a narrower tile.
KernelInfo Avx2Kernel(int64_t n);    // gemm_packed_avx2.cc
KernelInfo Avx512Kernel(int64_t n);  // gemm_packed_avx512.cc

}  // namespace gemm_packed
}  // namespace kernels
}  // namespace troupe
