// The driver of kernels/gemm_packed.h: cache blocking, packing (all four transpose cases and
// zero-padded edges), edge tiles and the choice of micro-kernel. The micro-kernels live in the
// per-ISA files; this file is built for the default target.
#include "kernels/gemm_packed.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

using gemm_packed::KernelInfo;
using gemm_packed::Mode;

// op(X) of a row-major matrix: element (r, c) is p[r * ld + c], or p[c * ld + r] transposed.
struct Operand {
  const float* p;
  int64_t ld;
  bool t;
};

// One full mr-row panel of a transposed A: mr contiguous floats per p (fixed-size copies).
template <int MR>
void PackTransposedPanel(const float* src, int64_t ld, int64_t kc, float* dst) {
  for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * MR, src + p * ld, sizeof(float) * MR);
}

// Rows [i0, i0 + mc) and depth [p0, p0 + kc) of op(A) as mr-row panels: dst[p * mr + i] per
// panel, rows past mc zero.
void PackA(const Operand& A, int64_t i0, int64_t mc, int64_t p0, int64_t kc, int mr, float* dst) {
  for (int64_t ir = 0; ir < mc; ir += mr, dst += mr * kc) {
    const int rows = static_cast<int>(std::min<int64_t>(mr, mc - ir));
    if (A.t && rows == mr && (mr == 6 || mr == 14)) {
      const float* src = A.p + p0 * A.ld + i0 + ir;
      if (mr == 6) PackTransposedPanel<6>(src, A.ld, kc, dst);
      if (mr == 14) PackTransposedPanel<14>(src, A.ld, kc, dst);
      continue;
    }
    if (A.t) {
      // (Loops rather than memcpy and fill: a libc call per few floats cost more than the copy.)
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = A.p + (p0 + p) * A.ld + i0 + ir;
        float* out = dst + p * mr;
        for (int i = 0; i < rows; ++i) out[i] = src[i];
        for (int i = rows; i < mr; ++i) out[i] = 0.0f;
      }
      continue;
    }
    for (int i = 0; i < rows; ++i) {
      const float* src = A.p + (i0 + ir + i) * A.ld + p0;
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = src[p];
    }
    for (int i = rows; i < mr; ++i) {
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = 0.0f;
    }
  }
}

#if defined(__AVX2__)
// The 8 × 8 block at src (row stride ld) transposed into dst (row stride ldd).
inline void Transpose8x8(const float* src, int64_t ld, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// Columns [j0, j0 + cols) of a transposed op(B) (rows of the stored matrix), depth
// [p0, p0 + kc): dst[p * nr + j]. A copy, so the blocked transpose changes no bits; it replaces
// scattered single-float stores (the nt products' packing was ~3% of transformer_lm's step).
void PackTransposed(const Operand& B, int64_t p0, int64_t kc, int64_t j0, int cols, int nr,
                    float* dst) {
  int j = 0;
#if defined(__AVX2__)
  for (; j + 8 <= cols; j += 8) {
    const float* src = B.p + (j0 + j) * B.ld + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) Transpose8x8(src + p, B.ld, dst + p * nr + j, nr);
    for (; p < kc; ++p) {
      for (int jj = 0; jj < 8; ++jj) dst[p * nr + j + jj] = src[jj * B.ld + p];
    }
  }
#endif
  for (; j < cols; ++j) {
    const float* src = B.p + (j0 + j) * B.ld + p0;
    for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = src[p];
  }
}

// Depth [p0, p0 + kc) and columns [j0, j0 + nc) of op(B) as nr-column panels:
// dst[p * nr + j] per panel, columns past nc zero.
void PackB(const Operand& B, int64_t p0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) {
  for (int64_t jr = 0; jr < nc; jr += nr, dst += nr * kc) {
    const int cols = static_cast<int>(std::min<int64_t>(nr, nc - jr));
    if (!B.t && cols == nr) {
      // A full panel: plain row copies, which vectorise (the edge case below does not).
      for (int64_t p = 0; p < kc; ++p) {
        std::memcpy(dst + p * nr, B.p + (p0 + p) * B.ld + j0 + jr, sizeof(float) * nr);
      }
      continue;
    }
    if (!B.t) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = B.p + (p0 + p) * B.ld + j0 + jr;
        for (int j = 0; j < nr; ++j) dst[p * nr + j] = j < cols ? src[j] : 0.0f;
      }
      continue;
    }
    PackTransposed(B, p0, kc, j0 + jr, cols, nr, dst);
    for (int j = cols; j < nr; ++j) {
      for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = 0.0f;
    }
  }
}

// A tile cut by the edge of C: the kernel runs on a full mr × nr scratch tile holding the
// valid part of C (when the chain continues) and only the valid part is written back.
void EdgeTile(const KernelInfo& ki, gemm_packed::MicroKernel fn, int64_t kc, const float* a,
              int64_t lda, const float* b, float* c, int64_t ldc, int rows, int cols, Mode mode) {
  alignas(64) float tile[32 * 64];
  const size_t bytes = sizeof(float) * static_cast<size_t>(cols);
  if (mode != Mode::kStore) {
    for (int i = 0; i < rows; ++i) std::memcpy(tile + i * ki.nr, c + i * ldc, bytes);
  }
  fn(kc, a, lda, b, tile, ki.nr, mode);
  for (int i = 0; i < rows; ++i) std::memcpy(c + i * ldc, tile + i * ki.nr, bytes);
}

// The A side of one row block: A in place (`rows`, `lda`, `t`) for every full mr-row panel
// and, in `packed`, a copy of the trailing partial panel only (zero-padded to mr rows).
struct ABlock {
  const float* packed = nullptr;
  const float* rows = nullptr;  // op(A)'s element (i, p) at rows[i * lda + p], or transposed
  int64_t lda = 0;
  bool t = false;
};

// Rows [0, mc) of the C block whose packed B slice is `bp` (nc columns), kc deep.
void RowBlock(const KernelInfo& ki, const ABlock& A, const float* bp, int64_t mc, int64_t nc,
              int64_t kc, float* c, int64_t ldc, Mode mode) {
  for (int64_t jr = 0; jr < nc; jr += ki.nr) {
    const int cols = static_cast<int>(std::min<int64_t>(ki.nr, nc - jr));
    const float* b = bp + jr * kc;
    for (int64_t ir = 0; ir < mc; ir += ki.mr) {
      const int rows = static_cast<int>(std::min<int64_t>(ki.mr, mc - ir));
      const bool direct = A.rows != nullptr && rows == ki.mr;
      const gemm_packed::MicroKernel fn = direct && !A.t ? ki.fn_rows : ki.fn;
      // A.rows == nullptr: the whole block is packed, panel after panel.
      const float* a =
          !direct ? A.packed + (A.rows == nullptr ? ir * kc : 0) : A.rows + ir * (A.t ? 1 : A.lda);
      const int64_t lda = direct ? A.lda : ki.mr;
      float* ct = c + ir * ldc + jr;
      if (rows == ki.mr && cols == ki.nr) {
        fn(kc, a, lda, b, ct, ldc, mode);
      } else if (cols == ki.nr && ki.partial != nullptr) {
        ki.partial(rows)(kc, a, lda, b, ct, ldc, mode);  // a packed panel: !direct
      } else {
        EdgeTile(ki, fn, kc, a, lda, b, ct, ldc, rows, cols, mode);
      }
    }
  }
}

// Where the (jc, pc) slice of a whole packed op(B) starts (GemmPackB's layout): column blocks
// one after another, each k deep, its kc slices RoundUp(nc, nr) wide.
int64_t PackedSliceOffset(const KernelInfo& ki, int64_t n, int64_t k, int64_t jc, int64_t pc) {
  return jc * k + pc * simd::RoundUp(std::min(ki.nc, n - jc), ki.nr);
}

// C = op(A) op(B), or with `add` (only for k <= ki.kc: one slice, the chain in registers)
// C += it. `packed_b`: op(B) already packed whole (GemmPackB), b unused. `stream_a`: every
// panel of A is packed (GemmPackedStreamA).
void Run(const KernelInfo& ki, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
         int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool add = false,
         const float* packed_b = nullptr, bool stream_a = false) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (add) return;
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  thread_local std::vector<float> a_buf, b_buf;
  const Operand A{a, lda, ta}, B{b, ldb, tb};
  const int64_t nc_max = std::min(ki.nc, simd::RoundUp(n, ki.nr));
  // A transposed with rows 512 B apart or a multiple of that: read in place, the rows of a panel
  // fall in at most 8 of L1's 64 sets, so the panel (kc rows) does not stay in L1 and comes
  // from L2 again for every column panel (cold from memory, in a training step, the first
  // time). It is packed whole: transformer weight gradients (lda 128, 512) and 1x1 filter
  // gradients of 128+ channels.
  const bool pack_all = stream_a || (ta && lda % 128 == 0);
  float* ap = simd::Aligned64(a_buf, (pack_all ? ki.mc : ki.mr) * ki.kc);
  float* b_own = packed_b ? nullptr : simd::Aligned64(b_buf, nc_max * ki.kc);
  for (int64_t jc = 0; jc < n; jc += ki.nc) {
    const int64_t nc = std::min(ki.nc, n - jc);
    for (int64_t pc = 0; pc < k; pc += ki.kc) {
      const int64_t kc = std::min(ki.kc, k - pc);
      const float* bp = b_own;
      if (packed_b) {
        bp = packed_b + PackedSliceOffset(ki, n, k, jc, pc);
      } else if (!tb && n == ki.nr && ldb == ki.nr) {
        bp = b + pc * ldb;  // one panel, stored as packing would lay it out
      } else {
        PackB(B, pc, kc, jc, nc, ki.nr, b_own);
      }
      const Mode mode = pc > 0 ? Mode::kContinue : add ? Mode::kAdd : Mode::kStore;
      for (int64_t ic = 0; ic < m; ic += ki.mc) {
        const int64_t mc = std::min(ki.mc, m - ic);
        if (pack_all) {
          PackA(A, ic, mc, pc, kc, ki.mr, ap);
          RowBlock(ki, ABlock{ap, nullptr, 0, false}, bp, mc, nc, kc, c + ic * ldc + jc, ldc, mode);
          continue;
        }
        // Only the trailing partial panel of A is packed.
        const int64_t full = mc / ki.mr * ki.mr;
        const ABlock block{ap, ta ? a + pc * lda + ic : a + ic * lda + pc, lda, ta};
        if (full < mc) PackA(A, ic + full, mc - full, pc, kc, ki.mr, ap);
        RowBlock(ki, block, bp, mc, nc, kc, c + ic * ldc + jc, ldc, mode);
      }
    }
  }
}

// The portable micro-kernels: std::fma chains on 4 × 8 tiles, A at a[p * lda + i] or, with
// kRows, a[i * lda + p].
template <bool kRows>
void ScalarKernel(int64_t kc, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                  Mode mode) {
  constexpr int kMr = 4, kNr = 8;
  float acc[kMr][kNr];
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) acc[i][j] = mode == Mode::kContinue ? c[i * ldc + j] : 0.0f;
  }
  for (int64_t p = 0; p < kc; ++p, a += kRows ? 1 : lda, b += kNr) {
    for (int i = 0; i < kMr; ++i) {
      const float ai = a[kRows ? i * lda : i];
      for (int j = 0; j < kNr; ++j) acc[i][j] = std::fma(ai, b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) {
      c[i * ldc + j] = mode == Mode::kAdd ? c[i * ldc + j] + acc[i][j] : acc[i][j];
    }
  }
}

std::atomic<GemmPath> g_path{GemmPath::kAuto};

bool CpuHas(bool avx512) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  return !avx512 || __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

}  // namespace

bool HaveGemmPackedAvx2() {
  static const bool has = CpuHas(false) && gemm_packed::Avx2Kernel(64).fn != nullptr;
  return has;
}

bool HaveGemmPackedAvx512() {
  static const bool has = CpuHas(true) && gemm_packed::Avx512Kernel(64).fn != nullptr;
  return has;
}

void GemmPackedAvx2(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc) {
  Run(gemm_packed::Avx2Kernel(n), ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

void GemmPackedAvx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  Run(gemm_packed::Avx512Kernel(n), ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

void GemmPackedScalar(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  Run({ScalarKernel<false>, ScalarKernel<true>, 4, 8, 256, 64, 1024}, ta, tb, m, n, k, a, lda, b,
      ldb, c, ldc);
}

void SetGemmPathForTesting(GemmPath path) { g_path.store(path); }

namespace {

const KernelInfo kScalarKernel{ScalarKernel<false>, ScalarKernel<true>, 4, 8, 256, 64, 1024};

// The kernel GemmPacked runs for a product n wide: the forced path or the fastest allowed.
KernelInfo Choose(int64_t n) {
  const GemmPath forced = g_path.load(std::memory_order_relaxed);
  if (forced == GemmPath::kScalar) return kScalarKernel;
  if (forced == GemmPath::kAvx2 && HaveGemmPackedAvx2()) return gemm_packed::Avx2Kernel(n);
  if (forced == GemmPath::kAvx512 && HaveGemmPackedAvx512()) return gemm_packed::Avx512Kernel(n);
  if (simd::AllowAvx512() && HaveGemmPackedAvx512()) return gemm_packed::Avx512Kernel(n);
  if (HaveGemmPackedAvx2()) return gemm_packed::Avx2Kernel(n);
  return kScalarKernel;
}

}  // namespace

void GemmPacked(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc) {
  Run(Choose(n), ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

int64_t GemmPackedBSize(int64_t n, int64_t k) {
  const KernelInfo ki = Choose(n);
  if (n <= 0 || k <= 0) return 0;
  const int64_t last = (n - 1) / ki.nc * ki.nc;
  return PackedSliceOffset(ki, n, k, last, k);
}

int64_t GemmPackBUnit(int64_t n) { return Choose(n).nr; }

void GemmPackB(bool tb, int64_t n, int64_t k, const float* b, int64_t ldb, int64_t j0, int64_t j1,
               float* dst) {
  const KernelInfo ki = Choose(n);
  const Operand B{b, ldb, tb};
  j1 = std::min(j1, n);
  for (int64_t jc = j0 / ki.nc * ki.nc; jc < j1; jc += ki.nc) {
    const int64_t lo = std::max(j0, jc), hi = std::min({j1, jc + ki.nc, n});
    for (int64_t pc = 0; pc < k; pc += ki.kc) {
      const int64_t kc = std::min(ki.kc, k - pc);
      PackB(B, pc, kc, lo, hi - lo, ki.nr,
            dst + PackedSliceOffset(ki, n, k, jc, pc) + (lo - jc) * kc);
    }
  }
}

void GemmPackedB(bool ta, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* packed_b, float* c, int64_t ldc) {
  Run(Choose(n), ta, false, m, n, k, a, lda, nullptr, 0, c, ldc, false, packed_b);
}

void GemmPackedStreamA(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  Run(Choose(n), ta, tb, m, n, k, a, lda, b, ldb, c, ldc, false, nullptr, true);
}

void GemmPackedAdd(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  const KernelInfo ki = Choose(n);
  if (k <= ki.kc) return Run(ki, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, true);
  // Deeper: the product into scratch, then one add per element (the same bits). One slice as
  // deep as k instead was 10-30% slower at 512-1024 (a B panel that deep leaves L1).
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(m * n)) scratch.resize(static_cast<size_t>(m * n));
  Run(ki, ta, tb, m, n, k, a, lda, b, ldb, scratch.data(), n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] += scratch[i * n + j];
  }
}

}  // namespace kernels
}  // namespace troupe
