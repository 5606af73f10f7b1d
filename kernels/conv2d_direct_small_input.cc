// The direct Conv2D input gradient for few input channels and 16 or 32 output channels (see
// conv2d_direct_small.cc): each output pixel's patch row (a chain over the output channels, as
// the GEMM path's dy . filter^T) is added into a padded dx image in output-pixel order (the GEMM
// path's col2im order), so the bits are the GEMM path's, for either vector width and any thread
// count.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/conv2d_direct.h"
#include "kernels/conv2d_direct_tile.h"
#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

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
        hp(g.PaddedH()),
        wp(g.PaddedW()),
        rs(simd::RoundUp(g.PaddedW() * g.c, lanes)) {}
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
  const Balanced cols(g.ow, R);
  for (int64_t t = 0; t < cols.tiles; ++t) {
    const int64_t ow0 = cols.Start(t);
    const int rows = static_cast<int>(cols.Start(t + 1) - ow0);
    const T* a = dy + ow0 * g.f;
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      T* out = col + ow0 * l.kp + kh * l.S + l.P;
      const T* w = wt + kh * l.rp;
      int64_t v = 0;
      for (; v + 2 <= nv; v += 2) {
        TileN<T, kBytes, R, 2>(rows, g.f, a, g.f, 1, w + v * kL, wld, out + v * kL, l.kp);
      }
      for (; v < nv; ++v) {
        TileN<T, kBytes, R, 1>(rows, g.f, a, g.f, 1, w + v * kL, wld, out + v * kL, l.kp);
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

// out[r * ostep + v * lanes] += Tile's sums from zero (r < rows, v < C), one row after the
// other: rows that overlap in out get their adds in row order. With kSp > 0 (ostep = kSp
// vectors) the tile's span of out is loaded once, the adds done in registers (still in row
// order per element) and stored once: no store-to-load round trips between overlapping rows.
template <typename T, int kBytes, int R, int C, int kSp>
TROUPE_ALWAYS_INLINE void AddTileN(int rows, int64_t depth, const T* a, int64_t ars, const T* b,
                                   int64_t bds, T* out, int64_t ostep) {
  if constexpr (R > 1) {
    if (rows < R) {
      return AddTileN<T, kBytes, R - 1, C, kSp>(rows, depth, a, ars, b, bds, out, ostep);
    }
  }
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  V acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) acc[r][v] = V{};
  Accumulate<T, kBytes, R, C>(acc, depth, a, ars, 1, b, bds);
  if constexpr (kSp > 0) {
    constexpr int kSpan = (R - 1) * kSp + C;
    V span[kSpan];
#pragma GCC unroll 32
    for (int k = 0; k < kSpan; ++k) span[k] = simd::Load<V>(out + k * kL);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) span[r * kSp + v] += acc[r][v];
#pragma GCC unroll 32
    for (int k = 0; k < kSpan; ++k) simd::Store(out + k * kL, span[k]);
  } else {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) {
        T* o = out + r * ostep + v * kL;
        simd::Store(o, simd::Load<V>(o) + acc[r][v]);
      }
    }
  }
}

// InputColRow + ScatterRow without the patch rows in memory, where every pixel's run starts on
// a vector (c a multiple of the lanes) and is NV whole vectors: each tile's chains over f are
// added straight into the padded dx rows. A dx element gets its adds in the same order, output
// pixel by output pixel (one kernel row kh reaches a dx row from a given output row), so the
// bits are InputColRow + ScatterRow's.
template <typename T, int kBytes, int NV, int kSp>
TROUPE_ALWAYS_INLINE void InputRowFusedSp(const ConvGeo& g, const InLayout& l, const T* wt,
                                          const T* dy, int64_t oh, T* xb) {
  constexpr int R = kRows<kBytes, NV>;
  const Balanced cols(g.ow, R);
  const int64_t step = g.sw * g.c;
  for (int64_t t = 0; t < cols.tiles; ++t) {
    const int64_t ow0 = cols.Start(t);
    const int rows = static_cast<int>(cols.Start(t + 1) - ow0);
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      AddTileN<T, kBytes, R, NV, kSp>(rows, g.f, dy + ow0 * g.f, g.f, wt + kh * l.rp, g.kh * l.rp,
                                      xb + (oh * g.sh + kh) * l.rs + ow0 * step, step);
    }
  }
}

// Pixels one or two vectors apart (sw * c) add their tiles through registers.
template <typename T, int kBytes, int NV>
TROUPE_ALWAYS_INLINE void InputRowFused(const ConvGeo& g, const InLayout& l, const T* wt,
                                        const T* dy, int64_t oh, T* xb) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  const int64_t step = g.sw * g.c;
  if (step == kL) return InputRowFusedSp<T, kBytes, NV, 1>(g, l, wt, dy, oh, xb);
  if (step == 2 * kL) return InputRowFusedSp<T, kBytes, NV, 2>(g, l, wt, dy, oh, xb);
  InputRowFusedSp<T, kBytes, NV, 0>(g, l, wt, dy, oh, xb);
}

// AddTileN with row r added at out[r] + off.
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void AddTileAtN(int rows, int64_t depth, const T* a, int64_t ars, const T* b,
                                     int64_t bds, T* const* out, int64_t off) {
  if constexpr (R > 1) {
    if (rows < R) return AddTileAtN<T, kBytes, R - 1, C>(rows, depth, a, ars, b, bds, out, off);
  }
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  V acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) acc[r][v] = V{};
  Accumulate<T, kBytes, R, C>(acc, depth, a, ars, 1, b, bds);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) {
      T* o = out[r] + off + v * kL;
      simd::Store(o, simd::Load<V>(o) + acc[r][v]);
    }
  }
}

// The fused input gradient of a whole image for runs longer than InputRowFused's: a tile is R
// pixels in order (they may span output rows: small images still fill tiles) by C vectors of one
// filter tap (kh, kw), c a multiple of C vectors. The taps go in descending (kh, kw) order: a dx
// element that two pixels p1 < p2 of a tile reach gets p1's add first (p1 is on an earlier
// output row, so it reaches the element with a larger kh, or on the same row with a larger kw),
// as in ScatterRow; later tiles hold later pixels. So the bits are InputColRow + ScatterRow's.
template <typename T, int kBytes, int C>
TROUPE_ALWAYS_INLINE void InputImageFusedTaps(const ConvGeo& g, const InLayout& l, const T* wt,
                                              const T* dy, T* xb) {
  constexpr int R = kRows<kBytes, C>;
  constexpr int64_t kW = C * simd::kLanes<T, kBytes>;
  const Balanced pixels(g.oh * g.ow, R);
  for (int64_t t = 0; t < pixels.tiles; ++t) {
    const int64_t q0 = pixels.Start(t);
    const int rows = static_cast<int>(pixels.Start(t + 1) - q0);
    T* at[R];  // each pixel's window (tap 0, 0) in the padded dx
    for (int r = 0; r < rows; ++r) {
      const int64_t oh = (q0 + r) / g.ow, ow = (q0 + r) % g.ow;
      at[r] = xb + oh * g.sh * l.rs + ow * g.sw * g.c;
    }
    for (int64_t kh = g.kh - 1; kh >= 0; --kh) {
      for (int64_t kw = g.kw - 1; kw >= 0; --kw) {
        for (int64_t c0 = 0; c0 < g.c; c0 += kW) {
          const int64_t j = kw * g.c + c0;
          AddTileAtN<T, kBytes, R, C>(rows, g.f, dy + q0 * g.f, g.f, wt + kh * l.rp + j,
                                      g.kh * l.rp, at, kh * l.rs + j);
        }
      }
    }
  }
}

// One output row of the input gradient: its patch rows, then their scatter.
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void InputRow(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy,
                                   int64_t oh, T* col, T* xb) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if (g.c % kL == 0 && l.rp == l.run) {
    switch (l.run / kL) {
      case 1:
        return InputRowFused<T, kBytes, 1>(g, l, wt, dy, oh, xb);
      case 2:
        return InputRowFused<T, kBytes, 2>(g, l, wt, dy, oh, xb);
      case 3:
        return InputRowFused<T, kBytes, 3>(g, l, wt, dy, oh, xb);
      case 4:
        return InputRowFused<T, kBytes, 4>(g, l, wt, dy, oh, xb);
      default:
        break;
    }
  }
  InputColRow<T, kBytes>(g, l, wt, dy, col);
  ScatterRow<T, kBytes>(g, l, col, oh, xb);
}

// One image's input gradient into the padded dx xb (zero on entry).
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void InputImage(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy,
                                     T* col, T* xb) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if (g.c % kL == 0 && l.rp == l.run && l.run > 4 * kL) {
    if (g.c % (2 * kL) == 0) return InputImageFusedTaps<T, kBytes, 2>(g, l, wt, dy, xb);
    return InputImageFusedTaps<T, kBytes, 1>(g, l, wt, dy, xb);
  }
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    InputRow<T, kBytes>(g, l, wt, dy + oh * g.ow * g.f, oh, col, xb);
  }
}

template <typename T>
void InputImage32(const ConvGeo& g, const InLayout& l, const T* wt, const T* dy, T* col, T* xb) {
  InputImage<T, 32>(g, l, wt, dy, col, xb);
}
#if TROUPE_HAVE_AVX512_DISPATCH
template <typename T>
TROUPE_TARGET_AVX512 void InputImage64(const ConvGeo& g, const InLayout& l, const T* wt,
                                       const T* dy, T* col, T* xb) {
  InputImage<T, 64>(g, l, wt, dy, col, xb);
}
#endif

}  // namespace

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
      const T* d = dy + n * g.oh * g.ow * g.f;
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        InputImage64<T>(g, l, wt.data(), d, col, xb);
      } else {
        InputImage32<T>(g, l, wt.data(), d, col, xb);
      }
#else
      InputImage32<T>(g, l, wt.data(), d, col, xb);
#endif
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

template void Conv2DBackpropInputDirectSmall<float>(ThreadPool*, const ConvGeo&, const float*,
                                                    const float*, float*);
template void Conv2DBackpropInputDirectSmall<double>(ThreadPool*, const ConvGeo&, const double*,
                                                     const double*, double*);

}  // namespace kernels
}  // namespace troupe
