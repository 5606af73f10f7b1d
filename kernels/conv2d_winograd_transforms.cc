#include "kernels/conv2d_winograd_transforms.h"

#include <atomic>
#include <type_traits>
#include <vector>

#include "kernels/im2col.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace winograd {
namespace {

std::atomic<int> g_forced_width{0};

// Zeros for taps outside the image; a sink for outputs past its edge.
const float* Zeros(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.assign(n, 0.0f);
  return buf.data();
}
float* Sink(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Each transform is written once over V, a float or a vector (GCC's vector extensions: the same
// add, subtract or halving in every lane), so every width gives every element the same
// arithmetic.
using Vec8 = simd::Vec<float, 32>;
using Vec16 = simd::Vec<float, 64>;

template <typename V>
TROUPE_ALWAYS_INLINE V Ld(const float* p) {
  if constexpr (std::is_same_v<V, float>) {
    return *p;
  } else {
    return simd::Load<V>(p);
  }
}
template <typename V>
TROUPE_ALWAYS_INLINE void St(float* p, const V& v) {
  if constexpr (std::is_same_v<V, float>) {
    *p = v;
  } else {
    simd::Store(p, v);
  }
}

// Runs body.template operator()<V>(i) over [0, n): 16 at a time (64-byte vectors only), then 8,
// then one. (Function objects with always-inline members rather than lambdas: a lambda's body
// would not inherit the AVX-512 target of the function it is inlined into.)
template <int kBytes, typename Body>
TROUPE_ALWAYS_INLINE void ForLanes(int64_t n, const Body& body) {
  int64_t i = 0;
  if constexpr (kBytes == 64) {
    for (; i + 16 <= n; i += 16) body.template operator()<Vec16>(i);
  }
  for (; i + 8 <= n; i += 8) body.template operator()<Vec8>(i);
  for (; i < n; ++i) body.template operator()<float>(i);
}

// body.template operator()<V>(e) for the elements e = c * f_count + f of channels [c0, c1) of
// a [.., c, f] array, f in runs of 8.
template <typename Body>
TROUPE_ALWAYS_INLINE void ForFilterElements(const ConvGeo& g, int64_t c0, int64_t c1,
                                            const Body& body) {
  for (int64_t c = c0; c < c1; ++c) {
    ForLanes<32>(g.f, [&]<typename V>(int64_t f) { body.template operator()<V>(c * g.f + f); });
  }
}

// One tile's V from its 16 taps p (row-major over the 4x4 window): the columns of B^T d, then
// its rows times B.
struct InputLanes {
  const float* const* p;
  float* out;
  int64_t stride;
  template <typename V>
  TROUPE_ALWAYS_INLINE void operator()(int64_t c) const {
    V s[16];
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      const V d0 = Ld<V>(p[b] + c), d1 = Ld<V>(p[4 + b] + c);
      const V d2 = Ld<V>(p[8 + b] + c), d3 = Ld<V>(p[12 + b] + c);
      s[b] = d0 - d2;
      s[4 + b] = d1 + d2;
      s[8 + b] = d2 - d1;
      s[12 + b] = d1 - d3;
    }
#pragma GCC unroll 4
    for (int a = 0; a < 4; ++a) {
      const V* q = s + a * 4;
      St(out + (a * 4 + 0) * stride + c, q[0] - q[2]);
      St(out + (a * 4 + 1) * stride + c, q[1] + q[2]);
      St(out + (a * 4 + 2) * stride + c, q[2] - q[1]);
      St(out + (a * 4 + 3) * stride + c, q[1] - q[3]);
    }
  }
};

template <int kBytes>
TROUPE_ALWAYS_INLINE void InputTransformT(const ConvGeo& g, const Tiles& tiles, const float* x,
                                          BlockRows at, int64_t c0, int64_t c1, int64_t ld,
                                          float* v) {
  const int64_t C = g.c, stride = PositionStride(at.rows, ld);
  const float* zero = Zeros(static_cast<size_t>(C));
  int64_t window[16];  // the taps' offsets from the window's corner, for windows inside
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) window[a * 4 + b] = (a * g.w + b) * C + c0;
  }
  GridCursor cur(tiles.th, tiles.tw, at.t0);
  for (int64_t t = at.t0; t < at.t1; ++t, cur.Next()) {
    const int64_t iy0 = g.InRow(2 * cur.row), ix0 = g.InCol(2 * cur.col);
    const float* p[16];
    if (iy0 >= 0 && iy0 + 4 <= g.h && ix0 >= 0 && ix0 + 4 <= g.w) {
      const float* corner = x + ((cur.n * g.h + iy0) * g.w + ix0) * C;
      for (int k = 0; k < 16; ++k) p[k] = corner + window[k];
    } else {
      for (int a = 0; a < 4; ++a) {
        for (int b = 0; b < 4; ++b) {
          const int64_t iy = iy0 + a, ix = ix0 + b;
          const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
          p[a * 4 + b] = (inside ? x + ((cur.n * g.h + iy) * g.w + ix) * C : zero) + c0;
        }
      }
    }
    ForLanes<kBytes>(c1 - c0, InputLanes{p, v + (t - at.base) * ld, stride});
  }
}

// One tile's 2x2 outputs q from its 16 rows of M.
struct OutputLanes {
  const float* in;
  float* const* q;
  int64_t stride;
  template <typename V>
  TROUPE_ALWAYS_INLINE void operator()(int64_t f) const {
    V r0[4], r1[4];
#pragma GCC unroll 4
    for (int b = 0; b < 4; ++b) {
      const V m0 = Ld<V>(in + b * stride + f), m1 = Ld<V>(in + (4 + b) * stride + f);
      const V m2 = Ld<V>(in + (8 + b) * stride + f), m3 = Ld<V>(in + (12 + b) * stride + f);
      r0[b] = (m0 + m1) + m2;
      r1[b] = (m1 - m2) - m3;
    }
    St(q[0] + f, (r0[0] + r0[1]) + r0[2]);
    St(q[1] + f, (r0[1] - r0[2]) - r0[3]);
    St(q[2] + f, (r1[0] + r1[1]) + r1[2]);
    St(q[3] + f, (r1[1] - r1[2]) - r1[3]);
  }
};

template <int kBytes>
TROUPE_ALWAYS_INLINE void OutputTransformT(const ConvGeo& g, const Tiles& tiles, const float* m,
                                           int64_t t0, int64_t t1, float* y) {
  const int64_t F = g.f, stride = PositionStride(t1 - t0, F);
  float* sink = Sink(static_cast<size_t>(F));
  GridCursor cur(tiles.th, tiles.tw, t0);
  for (int64_t t = t0; t < t1; ++t, cur.Next()) {
    const int64_t oy0 = 2 * cur.row, ox0 = 2 * cur.col;
    float* q[4];
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oy = oy0 + i, ox = ox0 + j;
        q[i * 2 + j] = oy < g.oh && ox < g.ow ? y + ((cur.n * g.oh + oy) * g.ow + ox) * F : sink;
      }
    }
    ForLanes<kBytes>(F, OutputLanes{m + (t - t0) * F, q, stride});
  }
}

// One tile's W from its 2x2 block of dy (q): the rows of A dy, then times A^T.
struct OutputGradLanes {
  const float* const* q;
  float* out;
  int64_t stride;
  template <typename V>
  TROUPE_ALWAYS_INLINE void operator()(int64_t f) const {
    V col[4][2];
#pragma GCC unroll 4
    for (int j = 0; j < 2; ++j) {
      const V d0 = Ld<V>(q[j] + f), d1 = Ld<V>(q[2 + j] + f);
      col[0][j] = d0;
      col[1][j] = d0 + d1;
      col[2][j] = d0 - d1;
      col[3][j] = -d1;
    }
#pragma GCC unroll 4
    for (int a = 0; a < 4; ++a) {
      St(out + (a * 4 + 0) * stride + f, col[a][0]);
      St(out + (a * 4 + 1) * stride + f, col[a][0] + col[a][1]);
      St(out + (a * 4 + 2) * stride + f, col[a][0] - col[a][1]);
      St(out + (a * 4 + 3) * stride + f, -col[a][1]);
    }
  }
};

template <int kBytes>
TROUPE_ALWAYS_INLINE void OutputGradTransformT(const ConvGeo& g, const Tiles& tiles,
                                               const float* dy, BlockRows at, float* w) {
  const int64_t F = g.f, stride = PositionStride(at.rows, F);
  const float* zero = Zeros(static_cast<size_t>(F));
  GridCursor cur(tiles.th, tiles.tw, at.t0);
  for (int64_t t = at.t0; t < at.t1; ++t, cur.Next()) {
    const int64_t oy0 = 2 * cur.row, ox0 = 2 * cur.col;
    const float* q[4];
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oy = oy0 + i, ox = ox0 + j;
        q[i * 2 + j] = oy < g.oh && ox < g.ow ? dy + ((cur.n * g.oh + oy) * g.ow + ox) * F : zero;
      }
    }
    ForLanes<kBytes>(F, OutputGradLanes{q, w + (t - at.base) * F, stride});
  }
}

#if TROUPE_HAVE_AVX512_DISPATCH
TROUPE_TARGET_AVX512 void InputTransform64(const ConvGeo& g, const Tiles& tiles, const float* x,
                                           BlockRows at, int64_t c0, int64_t c1, int64_t ld,
                                           float* v) {
  InputTransformT<64>(g, tiles, x, at, c0, c1, ld, v);
}
TROUPE_TARGET_AVX512 void OutputTransform64(const ConvGeo& g, const Tiles& tiles, const float* m,
                                            int64_t t0, int64_t t1, float* y) {
  OutputTransformT<64>(g, tiles, m, t0, t1, y);
}
TROUPE_TARGET_AVX512 void OutputGradTransform64(const ConvGeo& g, const Tiles& tiles,
                                                const float* dy, BlockRows at, float* w) {
  OutputGradTransformT<64>(g, tiles, dy, at, w);
}
#endif

}  // namespace

void FilterTransform(const ConvGeo& g, const float* filter, int64_t c0, int64_t c1, float* u) {
  const int64_t tap = g.c * g.f;
  ForFilterElements(g, c0, c1, [&]<typename V>(int64_t e) {
    const float* w = filter + e;
    float* out = u + e;
    const V half = simd::Splat<V>(0.5f);
    V r[4][3];
    for (int j = 0; j < 3; ++j) {
      const V g0 = Ld<V>(w + j * tap), g1 = Ld<V>(w + (3 + j) * tap);
      const V g2 = Ld<V>(w + (6 + j) * tap);
      r[0][j] = g0;
      r[1][j] = ((g0 + g1) + g2) * half;
      r[2][j] = ((g0 - g1) + g2) * half;
      r[3][j] = g2;
    }
    for (int i = 0; i < 4; ++i) {
      St(out + (i * 4 + 0) * tap, r[i][0]);
      St(out + (i * 4 + 1) * tap, ((r[i][0] + r[i][1]) + r[i][2]) * half);
      St(out + (i * 4 + 2) * tap, ((r[i][0] - r[i][1]) + r[i][2]) * half);
      St(out + (i * 4 + 3) * tap, r[i][2]);
    }
  });
}

void FilterGradTransform(const ConvGeo& g, const float* z, int64_t c0, int64_t c1, float* dw) {
  const int64_t tap = g.c * g.f;
  ForFilterElements(g, c0, c1, [&]<typename V>(int64_t e) {
    const float* in = z + e;
    float* out = dw + e;
    const V half = simd::Splat<V>(0.5f);
    V r[3][4];  // G^T Z
    for (int k = 0; k < 4; ++k) {
      const V z0 = Ld<V>(in + k * tap), z1 = Ld<V>(in + (4 + k) * tap);
      const V z2 = Ld<V>(in + (8 + k) * tap), z3 = Ld<V>(in + (12 + k) * tap);
      r[0][k] = z0 + (z1 + z2) * half;
      r[1][k] = (z1 - z2) * half;
      r[2][k] = (z1 + z2) * half + z3;
    }
    for (int i = 0; i < 3; ++i) {
      St(out + (i * 3 + 0) * tap, r[i][0] + (r[i][1] + r[i][2]) * half);
      St(out + (i * 3 + 1) * tap, (r[i][1] - r[i][2]) * half);
      St(out + (i * 3 + 2) * tap, (r[i][1] + r[i][2]) * half + r[i][3]);
    }
  });
}

bool WideTileTransforms() {
  const int forced = g_forced_width.load(std::memory_order_relaxed);
  if (forced != 0) return forced == 64 && simd::CpuHasAvx512();
  return simd::CpuHasAvx512();
}

int64_t PositionStride(int64_t rows, int64_t ld) {
  return (simd::RoundUp(rows * ld, 16) / 16 | 1) * 16;
}

void InputTransform(const ConvGeo& g, const Tiles& tiles, const float* x, BlockRows at, int64_t c0,
                    int64_t c1, int64_t ld, float* v) {
#if TROUPE_HAVE_AVX512_DISPATCH
  if (WideTileTransforms()) return InputTransform64(g, tiles, x, at, c0, c1, ld, v);
#endif
  InputTransformT<32>(g, tiles, x, at, c0, c1, ld, v);
}

void OutputTransform(const ConvGeo& g, const Tiles& tiles, const float* m, int64_t t0, int64_t t1,
                     float* y) {
#if TROUPE_HAVE_AVX512_DISPATCH
  if (WideTileTransforms()) return OutputTransform64(g, tiles, m, t0, t1, y);
#endif
  OutputTransformT<32>(g, tiles, m, t0, t1, y);
}

void OutputGradTransform(const ConvGeo& g, const Tiles& tiles, const float* dy, BlockRows at,
                         float* w) {
#if TROUPE_HAVE_AVX512_DISPATCH
  if (WideTileTransforms()) return OutputGradTransform64(g, tiles, dy, at, w);
#endif
  OutputGradTransformT<32>(g, tiles, dy, at, w);
}

void SetTileTransformWidthForTesting(int bytes) { g_forced_width.store(bytes); }

}  // namespace winograd
}  // namespace kernels
}  // namespace troupe
