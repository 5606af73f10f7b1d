// winograd::SmallProducts (conv2d_winograd_tiles.h): the 16 products of a few tiles against an
// unpacked filter transform, on register tiles of up to kRows rows by one vector of outputs.
#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/conv2d_winograd_tiles.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace winograd {
namespace {

constexpr int kRows = 14;

#if defined(__AVX2__) && defined(__FMA__)
#define TROUPE_WINOGRAD_SMALL_PRODUCTS 1

// c[r][0, lanes) = the fmaf chain over k < depth of a[r * lda + k] * b[k * ldb + 0, lanes),
// from +0.0f, for r < R: GemmPacked's contract, so the same bits as its products.
template <int R>
void Tile8(int64_t depth, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
           int64_t ldc) {
  __m256 acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m256 bv = _mm256_loadu_ps(b + k * ldb);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + r * lda + k), bv, acc[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) _mm256_storeu_ps(c + r * ldc, acc[r]);
}

#if TROUPE_HAVE_AVX512_DISPATCH
template <int R>
TROUPE_TARGET_AVX512 void Tile16(int64_t depth, const float* a, int64_t lda, const float* b,
                                 int64_t ldb, float* c, int64_t ldc) {
  __m512 acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m512 bv = _mm512_loadu_ps(b + k * ldb);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k]), bv, acc[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}
#endif

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t);

TileFn Tile8For(int rows) {
  static constexpr TileFn kFns[kRows] = {Tile8<1>,  Tile8<2>,  Tile8<3>,  Tile8<4>,  Tile8<5>,
                                         Tile8<6>,  Tile8<7>,  Tile8<8>,  Tile8<9>,  Tile8<10>,
                                         Tile8<11>, Tile8<12>, Tile8<13>, Tile8<14>};
  return kFns[rows - 1];
}

#if TROUPE_HAVE_AVX512_DISPATCH
TileFn Tile16For(int rows) {
  static constexpr TileFn kFns[kRows] = {
      Tile16<1>, Tile16<2>, Tile16<3>,  Tile16<4>,  Tile16<5>,  Tile16<6>,  Tile16<7>,
      Tile16<8>, Tile16<9>, Tile16<10>, Tile16<11>, Tile16<12>, Tile16<13>, Tile16<14>};
  return kFns[rows - 1];
}
#endif

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
  bool wide = false;
#if TROUPE_HAVE_AVX512_DISPATCH
  wide = f % 16 == 0 && WideTileTransforms();
#endif
  const int64_t lanes = wide ? 16 : 8;
  for (int xi = 0; xi < 16; ++xi) {
    const float* vx = v + xi * v_stride;
    const float* ux = u + xi * c * f;
    float* mx = m + xi * m_stride;
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      const int n = static_cast<int>(std::min<int64_t>(kRows, rows - r0));
#if TROUPE_HAVE_AVX512_DISPATCH
      const TileFn fn = wide ? Tile16For(n) : Tile8For(n);
#else
      const TileFn fn = Tile8For(n);
#endif
      for (int64_t j = 0; j < f; j += lanes) fn(c, vx + r0 * c, c, ux + j, f, mx + r0 * f + j, f);
    }
  }
#else
  (void)rows, (void)c, (void)f, (void)v, (void)u, (void)m;
#endif
}

}  // namespace winograd
}  // namespace kernels
}  // namespace troupe
