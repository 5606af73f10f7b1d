#include "kernels/conv2d_direct.h"

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

template <typename T>
using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Output columns [lo, hi) whose input column ow + kw - pl lies inside the image.
struct Span {
  int64_t lo, hi;
};
Span ValidColumns(const ConvGeo& g, int64_t kw) {
  return {std::max<int64_t>(0, g.pl - kw), std::min(g.ow, g.w + g.pl - kw)};
}

// dy row [ow][f] -> [f][ow].
template <typename T>
void TransposeRow(const ConvGeo& g, const T* dy_row, T* out) {
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    for (int64_t f = 0; f < g.f; ++f) out[f * g.ow + ow] = dy_row[ow * g.f + f];
  }
}

// Forward and filter gradient work on one image at a time in "expanded" rows: the output row
// [ow][f] is a contiguous run of J = ow * f values, and the input row is padded and each value
// repeated f times (xe[ih][p * f + c] = x[ih][p - pl]), so that tap (kh, kw) pairs output
// element j with xe[ih][kw * f + j] for every j: one long vector FMA per tap, whatever f is.
// Runs are padded to Jp (a multiple of the widest vector) so vector loops need no scalar tail.
template <typename T>
struct Expanded {
  int64_t J, Jp, XR;  // output run, padded run, expanded input row stride
  explicit Expanded(const ConvGeo& g)
      : J(g.ow * g.f),
        Jp(simd::RoundUp(g.ow * g.f, simd::kLanes<T, 64>)),
        XR((g.kw - 1) * g.f + simd::RoundUp(g.ow * g.f, simd::kLanes<T, 64>)) {}
};

// d[i * f + k] = src[i] for i < n, k < f; kF > 0: f is kF (whole vector stores, no loop over f).
template <typename T, int kF = 0>
void ExpandRow(const T* src, int64_t n, int64_t f, T* d) {
  if constexpr (kF > 0) f = kF;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < f; ++k) d[i * f + k] = src[i];
  }
}

// Every element of xe's rows is written: the padding (and the run's tail) with zeros.
template <typename T>
void ExpandImage(const ConvGeo& g, const Expanded<T>& e, const T* img, T* xe) {
  const int64_t cols = g.PaddedW();  // padded input columns any window reaches
  const int64_t iw0 = std::max<int64_t>(0, -g.pl), iw1 = std::max(iw0, std::min(g.w, cols - g.pl));
  for (int64_t ih = 0; ih < g.h; ++ih) {
    T* row = xe + ih * e.XR;
    const T* src = img + ih * g.w;
    std::fill(row, row + std::min(e.XR, (iw0 + g.pl) * g.f), T(0));
    T* d = row + (iw0 + g.pl) * g.f;
    if (g.f == 16) {
      ExpandRow<T, 16>(src + iw0, iw1 - iw0, g.f, d);  // ResNet-20's stem
    } else {
      ExpandRow<T>(src + iw0, iw1 - iw0, g.f, d);
    }
    std::fill(row + std::min(e.XR, (iw1 + g.pl) * g.f), row + e.XR, T(0));
  }
}

// Valid kernel rows [kh0, kh1) of output row oh.
struct KRange {
  int64_t kh0, kh1;
};
KRange KernelRows(const ConvGeo& g, int64_t oh) {
  return {std::max<int64_t>(0, g.pt - oh * g.sh), std::min(g.kh, g.h + g.pt - oh * g.sh)};
}

// kNv vectors of output row oh starting at j: sum over taps in (kh, kw) order.
template <typename T, int kBytes, int kNv>
TROUPE_ALWAYS_INLINE void ForwardChunk(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                       const T* wrep, int64_t oh, int64_t j, T* out) {
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  const KRange k = KernelRows(g, oh);
  V acc[kNv] = {};
  for (int64_t kh = k.kh0; kh < k.kh1; ++kh) {
    const T* xr = xe + (g.InRow(oh) + kh) * e.XR + j;
    const T* wr = wrep + kh * g.kw * e.Jp + j;
    for (int64_t kw = 0; kw < g.kw; ++kw) {
      const T* a = xr + kw * g.f;
      const T* w = wr + kw * e.Jp;
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) acc[v] += simd::Load<V>(a + v * kL) * simd::Load<V>(w + v * kL);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < kNv; ++v) simd::Store(out + v * kL, acc[v]);
}

template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void ForwardImage(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                       const T* wrep, T* y) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    T* out = y + oh * e.J;
    int64_t j = 0;
    for (; j + 4 * kL <= e.J; j += 4 * kL)
      ForwardChunk<T, kBytes, 4>(g, e, xe, wrep, oh, j, out + j);
    for (; j + kL <= e.J; j += kL) ForwardChunk<T, kBytes, 1>(g, e, xe, wrep, oh, j, out + j);
    if (j < e.J) {
      T tail[kL];
      ForwardChunk<T, kBytes, 1>(g, e, xe, wrep, oh, j, tail);
      std::copy(tail, tail + (e.J - j), out + j);
    }
  }
}

// acc[t][j] for G taps kw0 .. kw0 + G - 1 of kernel row kh and the NV vectors at j: the sums
// over output rows [oh0, oh1) (ascending) of xe * dy. The taps share the dy loads and give the
// multiply-adds G * NV independent chains.
template <typename T, int kBytes, int G, int NV>
TROUPE_ALWAYS_INLINE void FilterTaps(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                     const T* dyp, int64_t kh, int64_t kw0, int64_t oh0,
                                     int64_t oh1, int64_t j, T* acc) {
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  V s[G][NV] = {};
  const T* xk = xe + kw0 * g.f + j;
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const T* a = xk + (g.InRow(oh) + kh) * e.XR;
    V d[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) d[v] = simd::Load<V>(dyp + oh * e.Jp + j + v * kL);
#pragma GCC unroll 4
    for (int t = 0; t < G; ++t)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) s[t][v] += simd::Load<V>(a + t * g.f + v * kL) * d[v];
  }
#pragma GCC unroll 4
  for (int t = 0; t < G; ++t)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) simd::Store(acc + (kw0 + t) * e.Jp + j + v * kL, s[t][v]);
}

template <typename T, int kBytes, int G>
TROUPE_ALWAYS_INLINE void FilterTapGroup(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                         const T* dyp, int64_t kh, int64_t kw0, int64_t oh0,
                                         int64_t oh1, T* acc) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  constexpr int kNv = kBytes == 64 ? 4 : 2;  // G * kNv accumulators + kNv dy vectors in registers
  int64_t j = 0;
  for (; j + kNv * kL <= e.Jp; j += kNv * kL) {
    FilterTaps<T, kBytes, G, kNv>(g, e, xe, dyp, kh, kw0, oh0, oh1, j, acc);
  }
  for (; j < e.Jp; j += kL) FilterTaps<T, kBytes, G, 1>(g, e, xe, dyp, kh, kw0, oh0, oh1, j, acc);
}

// Filter gradient of one image, per tap and output element j: sum over output rows oh
// (ascending) of xe * dy, written to acc[tap][j] (dyp: dy rows padded to Jp with zeros).
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void FilterImage(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                      const T* dyp, T* acc) {
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    // Output rows whose input row oh * sh - pt + kh is inside the image.
    int64_t oh0 = 0, oh1 = g.oh;
    while (oh0 < oh1 && g.InRow(oh0) + kh < 0) ++oh0;
    while (oh1 > oh0 && g.InRow(oh1 - 1) + kh >= g.h) --oh1;
    T* row = acc + kh * g.kw * e.Jp;
    int64_t kw = 0;
    for (; kw + 3 <= g.kw; kw += 3)
      FilterTapGroup<T, kBytes, 3>(g, e, xe, dyp, kh, kw, oh0, oh1, row);
    if (g.kw - kw == 2) FilterTapGroup<T, kBytes, 2>(g, e, xe, dyp, kh, kw, oh0, oh1, row);
    if (g.kw - kw == 1) FilterTapGroup<T, kBytes, 1>(g, e, xe, dyp, kh, kw, oh0, oh1, row);
  }
}

template <typename T>
void ForwardImage32(const ConvGeo& g, const Expanded<T>& e, const T* xe, const T* wrep, T* y) {
  ForwardImage<T, 32>(g, e, xe, wrep, y);
}
template <typename T>
void FilterImage32(const ConvGeo& g, const Expanded<T>& e, const T* xe, const T* dyp, T* acc) {
  FilterImage<T, 32>(g, e, xe, dyp, acc);
}
#if TROUPE_HAVE_AVX512_DISPATCH
template <typename T>
TROUPE_TARGET_AVX512 void ForwardImage64(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                         const T* wrep, T* y) {
  ForwardImage<T, 64>(g, e, xe, wrep, y);
}
template <typename T>
TROUPE_TARGET_AVX512 void FilterImage64(const ConvGeo& g, const Expanded<T>& e, const T* xe,
                                        const T* dyp, T* acc) {
  FilterImage<T, 64>(g, e, xe, dyp, acc);
}
#endif

// out[f] = a[f] + a[f + F] + a[2F + f] + ... over the output columns, in column order: across f
// in vectors held in registers where F is a whole number of them (an Eigen map per column cost
// ResNet-20's stem 9% of its filter gradient), else one f at a time.
template <typename T>
void SumColumns(const ConvGeo& g, const T* a, T* out) {
  using V = simd::Vec<T, 32>;
  constexpr int64_t kL = simd::kLanes<T, 32>;
  if (g.f % kL == 0) {
    for (int64_t f0 = 0; f0 < g.f; f0 += kL) {
      V s = simd::Load<V>(a + f0);
      for (int64_t ow = 1; ow < g.ow; ++ow) s += simd::Load<V>(a + ow * g.f + f0);
      simd::Store(out + f0, s);
    }
    return;
  }
  for (int64_t f = 0; f < g.f; ++f) {
    T s = a[f];
    for (int64_t ow = 1; ow < g.ow; ++ow) s += a[ow * g.f + f];
    out[f] = s;
  }
}

// Per-thread scratch, reused across calls (kernels run many times with the same shapes).
template <typename T>
T* Scratch(int slot, size_t n) {
  thread_local std::vector<T> buf[2];
  if (buf[slot].size() < n) buf[slot].resize(n);
  return buf[slot].data();
}

}  // namespace

template <typename T>
void Conv2DDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  const Expanded<T> e(g);
  // Filter taps repeated along the output run: wrep[tap][j] = filter[tap][j % f].
  std::vector<T> wrep(static_cast<size_t>(g.kh * g.kw * e.Jp));
  for (int64_t k = 0; k < g.kh * g.kw; ++k) {
    for (int64_t j = 0; j < e.Jp; ++j) wrep[k * e.Jp + j] = filter[k * g.f + j % g.f];
  }
  const bool wide = simd::CpuHasAvx512();
  ParallelForBlocks(pool, g.n, 1, [&](int64_t n0, int64_t n1) {
    T* xe = Scratch<T>(0, static_cast<size_t>(g.h * e.XR));
    for (int64_t n = n0; n < n1; ++n) {
      ExpandImage(g, e, x + n * g.h * g.w, xe);
      T* yn = y + n * g.oh * e.J;
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        ForwardImage64<T>(g, e, xe, wrep.data(), yn);
        continue;
      }
#endif
      ForwardImage32<T>(g, e, xe, wrep.data(), yn);
    }
  });
  (void)wide;
}

template <typename T>
void Conv2DBackpropInputDirectC1(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy,
                                 T* dx) {
  // One image per block: every dx element is accumulated in (oh, kh, kw, f) order.
  ParallelForBlocks(pool, g.n, 1, [&](int64_t n0, int64_t n1) {
    std::vector<T> dyt(static_cast<size_t>(g.f * g.ow));
    for (int64_t n = n0; n < n1; ++n) {
      T* img = dx + n * g.h * g.w;
      std::fill(img, img + g.h * g.w, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        TransposeRow(g, dy + (n * g.oh + oh) * g.ow * g.f, dyt.data());
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = g.InRow(oh) + kh;
          if (ih < 0 || ih >= g.h) continue;
          T* xr = img + ih * g.w;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const Span s = ValidColumns(g, kw);
            if (s.hi <= s.lo) continue;
            Vec<T> out(xr + s.lo + kw - g.pl, s.hi - s.lo);
            const T* w = filter + (kh * g.kw + kw) * g.f;
            for (int64_t f = 0; f < g.f; ++f) {
              out += w[f] * ConstVec<T>(dyt.data() + f * g.ow + s.lo, s.hi - s.lo);
            }
          }
        }
      }
    }
  });
}

template <typename T>
void Conv2DBackpropFilterDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy,
                                  T* dw) {
  const Expanded<T> e(g);
  const int64_t taps = g.kh * g.kw, K = taps * g.f;
  // One partial per image, summed in image order: the same bits for any thread count.
  std::vector<T> partial(static_cast<size_t>(std::max<int64_t>(g.n, 1) * K), T(0));
  const bool wide = simd::CpuHasAvx512();
  ParallelForBlocks(pool, g.n, 1, [&](int64_t n0, int64_t n1) {
    T* xe = Scratch<T>(0, static_cast<size_t>(g.h * e.XR));
    // dy's rows padded to Jp, where J is not a whole number of vectors (else dy itself).
    const bool pad_dy = e.Jp != e.J;
    T* scratch = Scratch<T>(1, static_cast<size_t>(((pad_dy ? g.oh : 0) + taps) * e.Jp));
    T* acc = scratch + (pad_dy ? g.oh * e.Jp : 0);  // [tap][Jp]
    for (int64_t n = n0; n < n1; ++n) {
      ExpandImage(g, e, x + n * g.h * g.w, xe);
      const T* dyp = dy + n * g.oh * e.J;  // [oh][Jp]
      if (pad_dy) {
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          std::copy(dyp + oh * e.J, dyp + (oh + 1) * e.J, scratch + oh * e.Jp);
          std::fill(scratch + oh * e.Jp + e.J, scratch + (oh + 1) * e.Jp, T(0));
        }
        dyp = scratch;
      }
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        FilterImage64<T>(g, e, xe, dyp, acc);
      } else {
        FilterImage32<T>(g, e, xe, dyp, acc);
      }
#else
      FilterImage32<T>(g, e, xe, dyp, acc);
#endif
      // Per tap: the output columns' sums added in column order.
      T* p = partial.data() + n * K;
      for (int64_t k = 0; k < taps; ++k) SumColumns(g, acc + k * e.Jp, p + k * g.f);
    }
  });
  (void)wide;
  Vec<T> out(dw, K);
  out = ConstVec<T>(partial.data(), K);
  for (int64_t n = 1; n < g.n; ++n) out += ConstVec<T>(partial.data() + n * K, K);
}

template void Conv2DDirectC1<float>(ThreadPool*, const ConvGeo&, const float*, const float*,
                                    float*);
template void Conv2DDirectC1<double>(ThreadPool*, const ConvGeo&, const double*, const double*,
                                     double*);
template void Conv2DBackpropInputDirectC1<float>(ThreadPool*, const ConvGeo&, const float*,
                                                 const float*, float*);
template void Conv2DBackpropInputDirectC1<double>(ThreadPool*, const ConvGeo&, const double*,
                                                  const double*, double*);
template void Conv2DBackpropFilterDirectC1<float>(ThreadPool*, const ConvGeo&, const float*,
                                                  const float*, float*);
template void Conv2DBackpropFilterDirectC1<double>(ThreadPool*, const ConvGeo&, const double*,
                                                   const double*, double*);

}  // namespace kernels
}  // namespace troupe
