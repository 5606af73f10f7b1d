// Direct (no im2col, no GEMM packing) Conv2D forward and filter gradient: few input channels
// into 16 or 32 output channels, e.g. LeNet's second layer (5x5x6 -> 16) and ResNet-20's 16- and
// 32-channel stages, and the forward of up to 64 -> 64 channels (conv2d_direct.h says which; the
// input gradient: conv2d_direct_small_input.cc). All are register tiles (conv2d_direct_tile.h).
// Every output element is summed in the order of the im2col path's columns (kh, kw, c) or rows
// (output pixels), starting from zero, so results match the GEMM path closely (exactly for the
// forward) and are the same bits for either vector width and any thread count.
#include <Eigen/Core>
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/conv2d_direct.h"
#include "kernels/conv2d_direct_tile.h"
#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {
// The input zero-padded so that every window lies inside, as in im2col (which multiplies the
// padding zeros too); VALID convolutions whose windows stay inside need no copy.
struct PadGeo {
  int64_t hp, wp, row, image;  // padded rows, columns, row and image strides (elements)
  bool copy;                   // false: the input itself (row = w * c, image = h * w * c)
  explicit PadGeo(const ConvGeo& g)
      : hp(g.PaddedH()),
        wp(g.PaddedW()),
        row(g.PaddedW() * g.c),
        image(g.PaddedH() * g.PaddedW() * g.c),
        copy(g.pt != 0 || g.pl != 0 || hp > g.h || wp > g.w) {
    if (!copy) row = g.w * g.c, image = g.h * g.w * g.c;
  }
};

// Padded rows [h0, h1) of one image into its padded layout. `zero_border`: also clear what no
// input pixel covers (a buffer that still holds an earlier padded image of the same shape has it
// clear already: rows are only ever copied inside it, so a partial copy keeps it clear).
template <typename T>
void PadImage(const ConvGeo& g, const PadGeo& p, const T* img, bool zero_border, T* dst, int64_t h0,
              int64_t h1) {
  const int64_t ih0 = std::max({int64_t{0}, g.pt, h0}), ih1 = std::min({p.hp, g.h + g.pt, h1});
  const int64_t iw0 = std::max<int64_t>(0, g.pl), iw1 = std::min(p.wp, g.w + g.pl);
  if (zero_border) std::fill(dst, dst + p.image, T(0));
  if (iw1 <= iw0) return;
  for (int64_t ih = ih0; ih < ih1; ++ih) {
    const T* src = img + ((ih - g.pt) * g.w + iw0 - g.pl) * g.c;
    std::copy(src, src + (iw1 - iw0) * g.c, dst + ih * p.row + iw0 * g.c);
  }
}

// A per-thread buffer of padded images: `count` images from img on, padded one after the other,
// the first from padded row `first` on and the last up to padded row `last` (a filter-gradient
// block's rows start and end inside images: re-padding the whole images that straddle two
// blocks cost 10-20% of ResNet-20's 16-channel filter gradient). It remembers the geometry of the
// last images padded into it and how many slots have their border cleared for it: images of the
// same geometry only overwrite those slots' inside.
template <typename T>
T* PadInto(const ConvGeo& g, const PadGeo& p, const T* img, int64_t count = 1, int64_t first = 0,
           int64_t last = INT64_MAX) {
  struct Buffer {
    std::vector<T> data;
    int64_t key[7] = {};
    int64_t clear = 0;  // slots [0, clear) have a zero border for `key`
  };
  thread_local Buffer b;
  const int64_t key[7] = {p.hp, p.wp, g.c, g.h, g.w, g.pt, g.pl};
  if (!std::equal(key, key + 7, b.key)) {
    std::copy(key, key + 7, b.key);
    b.clear = 0;
  }
  const size_t need = static_cast<size_t>(count * p.image);
  if (b.data.size() < need) b.data.resize(need);
  for (int64_t i = 0; i < count; ++i) {
    PadImage(g, p, img + i * g.h * g.w * g.c, i >= b.clear, b.data.data() + i * p.image,
             i == 0 ? first : 0, i == count - 1 ? last : p.hp);
  }
  b.clear = std::max(b.clear, count);
  return b.data.data();
}

// (Templates rather than generic lambdas: a lambda would not inherit the AVX-512 target.)
// kArs > 0: the pixels' stride sw * c (Accumulate).
template <typename T, int kBytes, int C, int64_t kArs = 0>
TROUPE_ALWAYS_INLINE void ForwardImageC(const ConvGeo& g, const PadGeo& p, const T* img,
                                        const T* filter, T* y) {
  constexpr int R = kRows<kBytes, C>;
  // The window rows: segments of kw * c contiguous values, p.row apart; the filter's rows for
  // them follow each other.
  std::vector<int64_t> off(static_cast<size_t>(g.kh)), len(static_cast<size_t>(g.kh), g.kw * g.c);
  for (int64_t kh = 0; kh < g.kh; ++kh) off[static_cast<size_t>(kh)] = kh * p.row;
  const Segments window{off.data(), len.data(), g.kh};
  const Balanced cols(g.ow, R);
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t t = 0; t < cols.tiles; ++t) {
      const int64_t ow0 = cols.Start(t);
      const int rows = static_cast<int>(cols.Start(t + 1) - ow0);
      const T* a = img + oh * g.sh * p.row + ow0 * g.sw * g.c;
      TileSegments<T, kBytes, R, C, kArs>(rows, window, a, g.sw * g.c, 1, filter, g.f,
                                          y + (oh * g.ow + ow0) * g.f, g.f);
    }
  }
}

// Output pixels [q0, q0 + rows) of one image (they may span output rows: each has its own
// pointer), for the C vectors of output channels at filter / y: from zero, the chain over the
// window in (kh, kw, c) order, as ForwardImageC.
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void PixelTile(int rows, const ConvGeo& g, const PadGeo& p, const T* img,
                                    int64_t q0, const T* filter, T* y) {
  if constexpr (R > 1) {
    if (rows < R) return PixelTile<T, kBytes, R - 1, C>(rows, g, p, img, q0, filter, y);
  }
  const T* a[R];
  for (int r = 0; r < R; ++r) {
    const int64_t q = q0 + r, oh = q / g.ow, ow = q % g.ow;
    a[r] = img + oh * g.sh * p.row + ow * g.sw * g.c;
  }
  simd::Vec<T, kBytes> acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) acc[r][v] = simd::Vec<T, kBytes>{};
  const int64_t run = g.kw * g.c;
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    AccumulateRows<T, kBytes, R, C>(acc, run, a, kh * p.row, filter + kh * run * g.f, g.f);
  }
  StoreTile<T, kBytes, R, C>(acc, y + q0 * g.f, g.f);
}

// Wider filters (4 or more vectors of outputs, e.g. 64 floats): tiles of R pixels by two vectors
// of outputs, over the image's pixels in order so that small images (7x7) still fill tiles.
template <typename T, int kBytes, int C>
TROUPE_ALWAYS_INLINE void ForwardImagePixels(const ConvGeo& g, const PadGeo& p, const T* img,
                                             const T* filter, T* y) {
  constexpr int R = kRows<kBytes, C>;
  constexpr int64_t kW = C * simd::kLanes<T, kBytes>;
  const Balanced pixels(g.oh * g.ow, R);
  for (int64_t t = 0; t < pixels.tiles; ++t) {
    const int64_t q0 = pixels.Start(t);
    const int rows = static_cast<int>(pixels.Start(t + 1) - q0);
    for (int64_t f0 = 0; f0 < g.f; f0 += kW) {
      PixelTile<T, kBytes, R, C>(rows, g, p, img, q0, filter + f0, y + f0);
    }
  }
}

template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void ForwardImage(const ConvGeo& g, const PadGeo& p, const T* img,
                                       const T* filter, T* y) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if (g.f % (2 * kL) == 0) return ForwardImagePixels<T, kBytes, 2>(g, p, img, filter, y);
  if (g.f == kL) {
    // 16 channels into 16 (ResNet-20's first stage, AVX-512 floats): 9-10 rows per tile.
    if (g.sw * g.c == 16) return ForwardImageC<T, kBytes, 1, 16>(g, p, img, filter, y);
    ForwardImageC<T, kBytes, 1>(g, p, img, filter, y);
  } else if (g.f == 2 * kL) {
    ForwardImageC<T, kBytes, 2>(g, p, img, filter, y);
  } else {
    ForwardImageC<T, kBytes, 4>(g, p, img, filter, y);
  }
}

// Filter-gradient partial over output pixels [r0, r1): dw[k][f] = sum of patch[p][k] * dy[p][f]
// in pixel order.
template <typename T, int kBytes, int C>
TROUPE_ALWAYS_INLINE void FilterBlockC(const ConvGeo& g, const PadGeo& p, const T* base,
                                       const T* dy, const Segments& seg, int64_t r0, T* dw) {
  const int64_t run = g.kw * g.c;
  constexpr int R = kRows<kBytes, C>;
  const Balanced taps(run, R);
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    for (int64_t t = 0; t < taps.tiles; ++t) {
      const int64_t j0 = taps.Start(t);
      const int rows = static_cast<int>(taps.Start(t + 1) - j0);
      const T* a = base + kh * p.row + j0;
      TileSegments<T, kBytes, R, C>(rows, seg, a, 1, g.sw * g.c, dy + r0 * g.f, g.f,
                                    dw + (kh * run + j0) * g.f, g.f);
    }
  }
}

// Wider filters: FilterBlockC over column blocks of two vectors of output channels.
template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void FilterBlockColumns(const ConvGeo& g, const PadGeo& p, const T* base,
                                             const T* dy, const Segments& seg, int64_t r0, T* dw) {
  constexpr int C = 2;
  constexpr int R = kRows<kBytes, C>;
  constexpr int64_t kW = C * simd::kLanes<T, kBytes>;
  const int64_t run = g.kw * g.c;
  const Balanced taps(run, R);
  for (int64_t kh = 0; kh < g.kh; ++kh) {
    for (int64_t t = 0; t < taps.tiles; ++t) {
      const int64_t j0 = taps.Start(t);
      const int rows = static_cast<int>(taps.Start(t + 1) - j0);
      const T* a = base + kh * p.row + j0;
      for (int64_t f0 = 0; f0 < g.f; f0 += kW) {
        TileSegments<T, kBytes, R, C>(rows, seg, a, 1, g.sw * g.c, dy + r0 * g.f + f0, g.f,
                                      dw + (kh * run + j0) * g.f + f0, g.f);
      }
    }
  }
}

template <typename T, int kBytes>
TROUPE_ALWAYS_INLINE void FilterBlock(const ConvGeo& g, const PadGeo& p, const T* base, const T* dy,
                                      const Segments& seg, int64_t r0, T* dw) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if (g.f > 2 * kL && g.f % (2 * kL) == 0)
    return FilterBlockColumns<T, kBytes>(g, p, base, dy, seg, r0, dw);
  if (g.f == kL) {
    FilterBlockC<T, kBytes, 1>(g, p, base, dy, seg, r0, dw);
  } else if (g.f == 2 * kL) {
    FilterBlockC<T, kBytes, 2>(g, p, base, dy, seg, r0, dw);
  } else {
    FilterBlockC<T, kBytes, 4>(g, p, base, dy, seg, r0, dw);
  }
}

template <typename T>
void ForwardImage32(const ConvGeo& g, const PadGeo& p, const T* img, const T* w, T* y) {
  ForwardImage<T, 32>(g, p, img, w, y);
}
template <typename T>
void FilterBlock32(const ConvGeo& g, const PadGeo& p, const T* base, const T* dy,
                   const Segments& seg, int64_t r0, T* dw) {
  FilterBlock<T, 32>(g, p, base, dy, seg, r0, dw);
}
#if TROUPE_HAVE_AVX512_DISPATCH
template <typename T>
TROUPE_TARGET_AVX512 void ForwardImage64(const ConvGeo& g, const PadGeo& p, const T* img,
                                         const T* w, T* y) {
  ForwardImage<T, 64>(g, p, img, w, y);
}
template <typename T>
TROUPE_TARGET_AVX512 void FilterBlock64(const ConvGeo& g, const PadGeo& p, const T* base,
                                        const T* dy, const Segments& seg, int64_t r0, T* dw) {
  FilterBlock<T, 64>(g, p, base, dy, seg, r0, dw);
}
#endif

// Output pixels [r0, r1) as segments of one output row each (a fixed stride in the padded
// input): off[i] is the segment's first window in the padded images from image n0 on.
Segments RowSegments(const ConvGeo& g, const PadGeo& p, int64_t r0, int64_t r1, int64_t n0,
                     std::vector<int64_t>& off, std::vector<int64_t>& len) {
  const int64_t per_image = g.oh * g.ow;
  off.clear(), len.clear();
  for (int64_t r = r0; r < r1;) {
    const int64_t n = r / per_image, q = r % per_image, oh = q / g.ow, ow = q % g.ow;
    off.push_back((n - n0) * p.image + oh * g.sh * p.row + ow * g.sw * g.c);
    len.push_back(std::min(g.ow - ow, r1 - r));
    r += len.back();
  }
  return {off.data(), len.data(), static_cast<int64_t>(off.size())};
}

}  // namespace

// Images are padded one at a time into a per-thread buffer (L2-sized for these shapes): the
// padded copy is then hot when the tiles read it, and the threads share the copying.
template <typename T>
void Conv2DDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  const PadGeo p(g);
  const bool wide = Wide();
  ParallelForBlocks(pool, g.n, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* img = x + n * g.h * g.w * g.c;
      if (p.copy) img = PadInto(g, p, img);
      T* yn = y + n * g.oh * g.ow * g.f;
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        ForwardImage64<T>(g, p, img, filter, yn);
        continue;
      }
#endif
      ForwardImage32<T>(g, p, img, filter, yn);
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
  const PadGeo p(g);
  const int64_t per_image = g.oh * g.ow;
  std::vector<T> partial(static_cast<size_t>(nb > 1 ? nb * KF : 0));
  const bool wide = Wide();
  ParallelForBlocks(pool, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> off, len;
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
      T* out = nb > 1 ? partial.data() + b * KF : dw;
      // The block's images, padded into a per-thread buffer (hot when the tiles read them): only
      // the padded rows its windows read, from its first output row's to its last one's.
      const int64_t n0 = p.copy ? r0 / per_image : 0;
      const T* base = x;
      if (p.copy) {
        const int64_t first = (r0 % per_image) / g.ow * g.sh;
        const int64_t last = ((r1 - 1) % per_image) / g.ow * g.sh + g.kh;
        base = PadInto(g, p, x + n0 * g.h * g.w * g.c, (r1 - 1) / per_image - n0 + 1, first, last);
      }
      const Segments seg = RowSegments(g, p, r0, r1, n0, off, len);
#if TROUPE_HAVE_AVX512_DISPATCH
      if (wide) {
        FilterBlock64<T>(g, p, base, dy, seg, r0, out);
        continue;
      }
#endif
      FilterBlock32<T>(g, p, base, dy, seg, r0, out);
    }
  });
  (void)wide;
  if (nb == 1) return;
  // Fixed-order sum of the block partials, in parallel over dw's elements.
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  ParallelFor(pool, KF, nb, [&](int64_t e0, int64_t e1) {
    Eigen::Map<Arr> acc(dw + e0, e1 - e0);
    acc = Eigen::Map<const Arr>(partial.data() + e0, e1 - e0);
    for (int64_t b = 1; b < nb; ++b)
      acc += Eigen::Map<const Arr>(partial.data() + b * KF + e0, e1 - e0);
  });
}

#define TROUPE_INSTANTIATE(T)                                                              \
  template void Conv2DDirectSmall<T>(ThreadPool*, const ConvGeo&, const T*, const T*, T*); \
  template void Conv2DBackpropFilterDirectSmall<T>(ThreadPool*, const ConvGeo&, const T*,  \
                                                   const T*, int64_t, T*);
TROUPE_INSTANTIATE(float)
TROUPE_INSTANTIATE(double)
#undef TROUPE_INSTANTIATE

}  // namespace kernels
}  // namespace troupe
