// winograd::SmallProducts (conv2d_winograd_transforms.h): the 16 products of a few tiles against an
// unpacked filter transform, on register tiles of up to kRows rows by one vector of outputs.
#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/conv2d_winograd_transforms.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace winograd {
namespace {

// Rows per register tile: 14 accumulators (and the filter row) of the 32 vector registers. A
// forward group of tiles is one register tile.
constexpr int kRows = 14;
static_assert(kRows == kSmallGroupTiles);

#if defined(__AVX2__) && defined(__FMA__)
#define TROUPE_WINOGRAD_SMALL_PRODUCTS 1

// c[r][0, lanes) = the fmaf chain over k < depth of A(r, k) * b[k * ldb + 0, lanes), from
// +0.0f, for r < R, where A(r, k) is a[r * lda + k], or a[k * lda + r] with kTransA: GemmPacked's
// contract, so the same bits as its products.
template <int R, bool kTransA>
void Tile8(int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
           int64_t ldc) {
  __m256 acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m256 bv = _mm256_loadu_ps(b + k * ldb);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float* ar = kTransA ? a + k * lda + r : a + r * lda + k;
      acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(ar), bv, acc[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(c + r * ldc, acc[r]);
}

#if TROUPE_HAVE_AVX512_DISPATCH
template <int R, bool kTransA>
TROUPE_TARGET_AVX512 void Tile16(int64_t depth, const float* a, int64_t lda, const float* b,
                                 int64_t ldb, float* c, int64_t ldc) {
  __m512 acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m512 bv = _mm512_loadu_ps(b + k * ldb);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float ar = kTransA ? a[k * lda + r] : a[r * lda + k];
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(ar), bv, acc[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}
#endif

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t);

// The kernel for `rows` (R to kRows) rows of A.
template <bool kTransA, int R = 1>
TileFn TileFor(bool wide, int rows) {
  if constexpr (R < kRows) {
    if (rows > R) return TileFor<kTransA, R + 1>(wide, rows);
  }
#if TROUPE_HAVE_AVX512_DISPATCH
  if (wide) return Tile16<R, kTransA>;
#endif
  (void)wide;
  return Tile8<R, kTransA>;
}

// C (m x n, row stride n) = op(A) . B (B: depth x n, row stride n), row tiles of kRows.
template <bool kTransA>
void Product(int64_t m, int64_t n, int64_t depth, const float* a, int64_t lda, const float* b,
             float* c) {
  bool wide = false;
#if TROUPE_HAVE_AVX512_DISPATCH
  wide = n % 16 == 0 && WideTileTransforms();
#endif
  const int64_t lanes = wide ? 16 : 8;
  for (int64_t r0 = 0; r0 < m; r0 += kRows) {
    const TileFn fn = TileFor<kTransA>(wide, static_cast<int>(std::min<int64_t>(kRows, m - r0)));
    const float* ar = kTransA ? a + r0 : a + r0 * lda;
    for (int64_t j = 0; j < n; j += lanes) fn(depth, ar, lda, b + j, n, c + r0 * n + j, n);
  }
}

#else
#define TROUPE_WINOGRAD_SMALL_PRODUCTS 0
#endif

}  // namespace

bool SmallProductsApply(int64_t c, int64_t f) {
  return TROUPE_WINOGRAD_SMALL_PRODUCTS && f % 8 == 0 && c * f <= kSmallProductsMaxFilter;
}

void SmallProducts(int64_t rows, int64_t c, int64_t f, const float* v, const float* u, float* m) {
#if TROUPE_WINOGRAD_SMALL_PRODUCTS
  const int64_t v_stride = PositionStride(rows, c), m_stride = PositionStride(rows, f);
  for (int xi = 0; xi < 16; ++xi) {
    Product<false>(rows, f, c, v + xi * v_stride, c, u + xi * c * f, m + xi * m_stride);
  }
#else
  (void)rows, (void)c, (void)f, (void)v, (void)u, (void)m;
#endif
}

void SmallFilterGradProduct(int64_t rows, int64_t c, int64_t f, const float* v, int64_t ld,
                            const float* w, float* p) {
#if TROUPE_WINOGRAD_SMALL_PRODUCTS
  Product<true>(c, f, rows, v, ld, w, p);
#else
  (void)rows, (void)c, (void)f, (void)v, (void)ld, (void)w, (void)p;
#endif
}

}  // namespace winograd
}  // namespace kernels
}  // namespace troupe
