// Direct (no im2col, no GEMM packing) Conv2D kernels for few input channels and 16 or 32 output
// channels, e.g. LeNet's second layer (5x5x6 -> 16). All three are one broadcast-times-vector
// register tile (Tile below): R rows (output pixels or filter taps) by C vectors, summed over a
// depth one multiply-add at a time. Every output element is summed in the order of the im2col
// path's columns (kh, kw, c) or rows (output pixels), starting from zero, so results match the
// GEMM path closely and are the same bits for either vector width and any thread count.
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/conv2d_direct.h"
#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

// out[r][v] (+)= sum over d < depth of a[r * ars + d * ads] * b[d * bds + v * lanes], r < R,
// v < C. With `init` false the sums continue from the values already in out (exact: a store and
// a load do not round), which lets a caller split the depth into strided segments.
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void Tile(int64_t depth, const T* a, int64_t ars, int64_t ads, const T* b,
                               int64_t bds, T* out, int64_t ors, bool init) {
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  V acc[R][C];
  if (init) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) acc[r][v] = V{};
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) acc[r][v] = simd::Load<V>(out + r * ors + v * kL);
  }
  for (int64_t d = 0; d < depth; ++d) {
    V bv[C];
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) bv[v] = simd::Load<V>(b + d * bds + v * kL);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      // s - 0 (not simd::Splat's 0 + s, which must turn -0 into +0) folds into a broadcast
      // operand of the multiply-add.
      const V s = a[r * ars + d * ads] - V{};
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) acc[r][v] += s * bv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) simd::Store(out + r * ors + v * kL, acc[r][v]);
}

// Tile with a run-time row count 1..R.
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void TileN(int rows, int64_t depth, const T* a, int64_t ars, int64_t ads,
                                const T* b, int64_t bds, T* out, int64_t ors, bool init) {
  if (rows == R) return Tile<T, kBytes, R, C>(depth, a, ars, ads, b, bds, out, ors, init);
  if constexpr (R > 1) TileN<T, kBytes, R - 1, C>(rows, depth, a, ars, ads, b, bds, out, ors, init);
}

// Rows per tile for C vectors: the accumulators plus the C loaded vectors and a broadcast must
// fit in the register file (16 vector registers with AVX2, 32 with AVX-512).
template <int kBytes, int C>
// GCC keeps the accumulator array in registers only up to ~768 bytes.
constexpr int kRows = std::max(1, std::min({12, (kBytes == 64 ? 26 : 13) / C - 1,
                                            768 / (C * kBytes)}));

// The input as a zero-padded batch: every window lies inside, as in im2col (which multiplies
// the padding zeros too). VALID convolutions use the input itself.
template <typename T>
struct Padded {
  const T* base;
  int64_t row, image;  // strides in elements
  std::vector<T> buf;
  Padded(const ConvGeo& g, const T* x) {
    const int64_t hp = (g.oh - 1) * g.sh + g.kh, wp = (g.ow - 1) * g.sw + g.kw;
    if (g.pt == 0 && g.pl == 0 && hp <= g.h && wp <= g.w) {
      base = x, row = g.w * g.c, image = g.h * g.w * g.c;
      return;
    }
    row = wp * g.c, image = hp * row;
    buf.assign(static_cast<size_t>(g.n * image), T(0));
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t ih = std::max<int64_t>(0, g.pt); ih < std::min(hp, g.h + g.pt); ++ih) {
        const int64_t iw0 = std::max<int64_t>(0, g.pl), iw1 = std::min(wp, g.w + g.pl);
        if (iw1 <= iw0) continue;
        const T* src = x + ((n * g.h + ih - g.pt) * g.w + iw0 - g.pl) * g.c;
        std::copy(src, src + (iw1 - iw0) * g.c, buf.data() + n * image + ih * row + iw0 * g.c);
      }
    }
    base = buf.data();
  }
};

// (Templates rather than generic lambdas: a lambda would not inherit the AVX-512 target.)
template <typename T, int kBytes, int C>
TROUPE_ALWAYS_INLINE void ForwardImageC(const ConvGeo& g, const Padded<T>& xp, const T* img,
                                        const T* filter, T* y) {
  const int64_t run = g.kw * g.c;  // one window row: contiguous in the padded input
  constexpr int R = kRows<kBytes, C>;
  {
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      for (int64_t ow0 = 0; ow0 < g.ow; ow0 += R) {
        const int rows = static_cast<int>(std::min<int64_t>(R, g.ow - ow0));
        T* out = y + (oh * g.ow + ow0) * g.f;
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const T* a = img + (oh * g.sh + kh) * xp.row + ow0 * g.sw * g.c;
          TileN<T, kBytes, R, C>(rows, run, a, g.sw * g.c, 1, filter + kh * run * g.f, g.f, out,
                                 g.f, kh == 0);
        }
      }
    }
  }
}

template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void ForwardImage(const ConvGeo& g, const Padded<T>& xp, const T* img,
                                       const T* filter, T* y) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if (g.f == kL) {
    ForwardImageC<T, kBytes, 1>(g, xp, img, filter, y);
  } else if (g.f == 2 * kL) {
    ForwardImageC<T, kBytes, 2>(g, xp, img, filter, y);
  } else {
    ForwardImageC<T, kBytes, 4>(g, xp, img, filter, y);
  }
}

// Filter-gradient partial over output pixels [r0, r1): dw[k][f] = sum of patch[p][k] * dy[p][f]
// in pixel order.
template <typename T, int kBytes, int C>
TROUPE_ALWAYS_INLINE void FilterBlockC(const ConvGeo& g, const Padded<T>& xp, const T* dy,
                                       int64_t r0, int64_t r1, T* dw) {
  const int64_t run = g.kw * g.c, per_image = g.oh * g.ow;
  constexpr int R = kRows<kBytes, C>;
  {
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      for (int64_t j0 = 0; j0 < run; j0 += R) {
        const int rows = static_cast<int>(std::min<int64_t>(R, run - j0));
        T* out = dw + (kh * run + j0) * g.f;
        bool first = true;
        // Pixel segments: the rest of one output row at a time (a fixed stride in the input).
        for (int64_t r = r0; r < r1;) {
          const int64_t n = r / per_image, p = r % per_image, oh = p / g.ow, ow = p % g.ow;
          const int64_t len = std::min(g.ow - ow, r1 - r);
          const T* a = xp.base + n * xp.image + (oh * g.sh + kh) * xp.row + ow * g.sw * g.c + j0;
          TileN<T, kBytes, R, C>(rows, len, a, 1, g.sw * g.c, dy + r * g.f, g.f, out, g.f, first);
          first = false;
          r += len;
        }
      }
    }
  }
}

template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void FilterBlock(const ConvGeo& g, const Padded<T>& xp, const T* dy,
                                      int64_t r0, int64_t r1, T* dw) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if (g.f == kL) {
    FilterBlockC<T, kBytes, 1>(g, xp, dy, r0, r1, dw);
  } else if (g.f == 2 * kL) {
    FilterBlockC<T, kBytes, 2>(g, xp, dy, r0, r1, dw);
  } else {
    FilterBlockC<T, kBytes, 4>(g, xp, dy, r0, r1, dw);
  }
}

// Input-gradient layouts. A patch row (one output pixel) holds, per kernel row kh, the run of
// kw * c values between zero pads of P values: [P zeros | run, padded to rp | P zeros]. The dx
// image is accumulated in a buffer padded like the forward input (every window inside), with rows
// padded to whole vectors, so adding a run is a few aligned vector adds of unaligned loads from
// the zero-padded patch row (the pads add exact zeros; dx starts at +0, so it never holds -0).
struct InLayout {
  int64_t run, rp, P, S, kp;  // run, padded run, pad, kh segment stride, patch row stride
  int64_t hp, wp, rs;         // padded dx rows, columns, row stride
  InLayout(const ConvGeo& g, int64_t lanes)
      : run(g.kw * g.c),
        rp(simd::RoundUp(g.kw * g.c, lanes)),
        P(lanes),
        S(2 * lanes + simd::RoundUp(g.kw * g.c, lanes)),
        kp(g.kh * (2 * lanes + simd::RoundUp(g.kw * g.c, lanes))),
        hp((g.oh - 1) * g.sh + g.kh),
        wp((g.ow - 1) * g.sw + g.kw),
        rs(simd::RoundUp(((g.ow - 1) * g.sw + g.kw) * g.c, lanes)) {}
};

// Patch rows of one output row: col[ow][kh * S + P + j] = sum over f (in order) of
// dy[ow][f] * wt[f][kh * rp + j]; lanes [run, rp) are set to zero (not 0 * dy: dy may be
// infinite).
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void InputColRow(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy,
                                      T* col) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  constexpr int R = kRows<kBytes, 2>;
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  using M = simd::Vec<I, kBytes>;
  const int64_t nv = l.rp / kL, wld = g.kh * l.rp;
  // Bit mask keeping the lanes of the last run vector that are inside the run.
  M tail;
  for (int64_t i = 0; i < kL; ++i) tail[i] = (nv - 1) * kL + i < l.run ? I(-1) : I(0);
  for (int64_t ow0 = 0; ow0 < g.ow; ow0 += R) {
    const int rows = static_cast<int>(std::min<int64_t>(R, g.ow - ow0));
    const T* a = dy + ow0 * g.f;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      T* out = col + ow0 * l.kp + kh * l.S + l.P;
      const T* w = wt + kh * l.rp;
      int64_t v = 0;
      for (; v + 2 <= nv; v += 2) {
        TileN<T, kBytes, R, 2>(rows, g.f, a, g.f, 1, w + v * kL, wld, out + v * kL, l.kp, true);
      }
      for (; v < nv; ++v) {
        TileN<T, kBytes, R, 1>(rows, g.f, a, g.f, 1, w + v * kL, wld, out + v * kL, l.kp, true);
      }
      if (l.rp > l.run) {
        for (int r = 0; r < rows; ++r) {
          T* t = out + r * l.kp + (nv - 1) * kL;
          simd::Store(t, simd::Load<M>(t) & tail);
        }
      }
    }
  }
}

// Padded dx rows += the patch rows of output row oh, pixel by pixel (im2col's scatter order).
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void ScatterRow(const ConvGeo& g, const InLayout& l, const T* col, int64_t oh,
                                     T* xb) {
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    const int64_t start = ow * g.sw * g.c;
    const int64_t v0 = start / kL * kL, v1 = start + l.run;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      T* row = xb + (oh * g.sh + kh) * l.rs;
      const T* src = col + ow * l.kp + kh * l.S + l.P - start;
      for (int64_t v = v0; v < v1; v += kL) {
        simd::Store(row + v, simd::Load<V>(row + v) + simd::Load<V>(src + v));
      }
    }
  }
}

// One output row of the input gradient: its patch rows, then their scatter.
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void InputRow(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy,
                                   int64_t oh, T* col, T* xb) {
  InputColRow<T, kBytes>(g, l, wt, dy, col);
  ScatterRow<T, kBytes>(g, l, col, oh, xb);
}

template <typename T>
void ForwardImage32(const ConvGeo& g, const Padded<T>& xp, const T* img, const T* w, T* y) {
  ForwardImage<T, 32>(g, xp, img, w, y);
}
template <typename T>
void FilterBlock32(const ConvGeo& g, const Padded<T>& xp, const T* dy, int64_t r0, int64_t r1,
                   T* dw) {
  FilterBlock<T, 32>(g, xp, dy, r0, r1, dw);
}
template <typename T>
void InputRow32(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy, int64_t oh, T* col,
                T* xb) {
  InputRow<T, 32>(g, l, wt, dy, oh, col, xb);
}
#if TROUPE_HAVE_AVX512_DISPATCH
template <typename T>
TROUPE_TARGET_AVX512 void ForwardImage64(const ConvGeo& g, const Padded<T>& xp, const T* img,
                                         const T* w, T* y) {
  ForwardImage<T, 64>(g, xp, img, w, y);
}
template <typename T>
TROUPE_TARGET_AVX512 void FilterBlock64(const ConvGeo& g, const Padded<T>& xp, const T* dy,
                                        int64_t r0, int64_t r1, T* dw) {
  FilterBlock<T, 64>(g, xp, dy, r0, r1, dw);
}
template <typename T>
TROUPE_TARGET_AVX512 void InputRow64(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy,
                                     int64_t oh, T* col, T* xb) {
  InputRow<T, 64>(g, l, wt, dy, oh, col, xb);
}
#endif

bool Wide() {
#if TROUPE_HAVE_AVX512_DISPATCH
  return simd::CpuHasAvx512();
#else
  return false;
#endif
}

template <typename T>
T* Scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace

template <typename T>
void Conv2DDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  const Padded<T> xp(g, x);
  const bool wide = Wide();
  ParallelForBlocks(pool, g.n, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* img = xp.base + n * xp.image;
      T* yn = y + n * g.oh * g.ow * g.f;
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        ForwardImage64<T>(g, xp, img, filter, yn);
        continue;
      }
#endif
      ForwardImage32<T>(g, xp, img, filter, yn);
    }
  });
  (void)wide;
}

template <typename T>
void Conv2DBackpropInputDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* filter,
                                    const T* dy, T* dx) {
  const InLayout l(g, simd::kLanes<T, 64>);
  // wt[f][kh * rp + j] = filter[kh][j / c][j % c][f], zero for j >= run.
  std::vector<T> wt(static_cast<size_t>(g.f * g.kh * l.rp), T(0));
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    for (int64_t j = 0; j < l.run; ++j) {
      for (int64_t f = 0; f < g.f; ++f) {
        wt[f * g.kh * l.rp + kh * l.rp + j] = filter[(kh * l.run + j) * g.f + f];
      }
    }
  }
  const bool wide = Wide();
  const int64_t image = g.h * g.w * g.c;
  ParallelForBlocks(pool, g.n, 1, [&](int64_t n0, int64_t n1) {
    // Scratch: patch rows of one output row, then the padded dx image (+ a vector of slack).
    T* col = Scratch<T>(static_cast<size_t>(g.ow * l.kp + l.hp * l.rs + l.P));
    T* xb = col + g.ow * l.kp;
    std::fill(col, col + g.ow * l.kp, T(0));  // the pads; runs are rewritten per row
    for (int64_t n = n0; n < n1; ++n) {
      std::fill(xb, xb + l.hp * l.rs, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const T* d = dy + (n * g.oh + oh) * g.ow * g.f;
#if TROUPE_HAVE_AVX512_DISPATCH
        if (wide) {
          InputRow64<T>(g, l, wt.data(), d, oh, col, xb);
          continue;
        }
#endif
        InputRow32<T>(g, l, wt.data(), d, oh, col, xb);
      }
      // dx = the inside of the padded buffer (zero where no window reaches).
      T* img = dx + n * image;
      for (int64_t ih = 0; ih < g.h; ++ih) {
        T* dst = img + ih * g.w * g.c;
        const int64_t bh = ih + g.pt;
        const int64_t iw1 = bh < l.hp ? std::clamp<int64_t>(l.wp - g.pl, 0, g.w) : 0;
        if (iw1 > 0)
          std::copy(xb + bh * l.rs + g.pl * g.c, xb + bh * l.rs + (g.pl + iw1) * g.c, dst);
        std::fill(dst + iw1 * g.c, dst + g.w * g.c, T(0));
      }
    }
  });
  (void)wide;
}

template <typename T>
void Conv2DBackpropFilterDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy,
                                     int64_t block, T* dw) {
  const int64_t KF = g.K() * g.f, rows = g.rows();
  const int64_t nb = (rows + block - 1) / block;
  if (nb == 0) {
    std::fill(dw, dw + KF, T(0));
    return;
  }
  const Padded<T> xp(g, x);
  std::vector<T> partial(static_cast<size_t>(nb > 1 ? nb * KF : 0));
  const bool wide = Wide();
  ParallelForBlocks(pool, nb, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
      T* out = nb > 1 ? partial.data() + b * KF : dw;
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        FilterBlock64<T>(g, xp, dy, r0, r1, out);
        continue;
      }
#endif
      FilterBlock32<T>(g, xp, dy, r0, r1, out);
    }
  });
  (void)wide;
  if (nb == 1) return;
  // Fixed-order sum of the block partials.
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> acc(dw, KF);
  acc = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(partial.data(), KF);
  for (int64_t b = 1; b < nb; ++b) {
    acc += Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(partial.data() + b * KF, KF);
  }
}

#define TROUPE_INSTANTIATE(T)                                                                      \
  template void Conv2DDirectSmall<T>(ThreadPool*, const ConvGeo&, const T*, const T*, T*);         \
  template void Conv2DBackpropInputDirectSmall<T>(ThreadPool*, const ConvGeo&, const T*, const T*, \
                                                  T*);                                             \
  template void Conv2DBackpropFilterDirectSmall<T>(ThreadPool*, const ConvGeo&, const T*,          \
                                                   const T*, int64_t, T*);
TROUPE_INSTANTIATE(float)
TROUPE_INSTANTIATE(double)
#undef TROUPE_INSTANTIATE

}  // namespace kernels
}  // namespace troupe
