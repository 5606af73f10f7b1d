#include "kernels/conv2d_direct.h"

#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "kernels/kernel_util.h"

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

// Output rows (n, oh) per block: a constant, so the split depends on the shape only.
constexpr int64_t kRowsPerBlock = 16;

// dy row [ow][f] -> [f][ow].
template <typename T>
void TransposeRow(const ConvGeo& g, const T* dy_row, T* out) {
  for (int64_t ow = 0; ow < g.ow; ++ow) {
    for (int64_t f = 0; f < g.f; ++f) out[f * g.ow + ow] = dy_row[ow * g.f + f];
  }
}

// Few output channels: each output pixel's channels live in one fixed-size Eigen array of
// kLanes >= f (one or two SIMD registers), accumulated over the window in (kh, kw) order.
template <typename T, int kLanes>
void DirectC1Lanes(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  using Lane = Eigen::Array<T, kLanes, 1>;
  const int64_t taps = g.kh * g.kw;
  std::vector<Lane, Eigen::aligned_allocator<Lane>> w(static_cast<size_t>(taps), Lane::Zero());
  for (int64_t k = 0; k < taps; ++k) {
    for (int64_t f = 0; f < g.f; ++f) w[static_cast<size_t>(k)](f) = filter[k * g.f + f];
  }
  ParallelForBlocks(pool, g.n * g.oh, kRowsPerBlock, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / g.oh, oh = row % g.oh;
      const int64_t kh0 = std::max<int64_t>(0, g.pt - oh * g.sh);
      const int64_t kh1 = std::min(g.kh, g.h + g.pt - oh * g.sh);
      const int64_t ih0 = oh * g.sh - g.pt;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t iw0 = ow * g.sw - g.pl;
        const int64_t kw0 = std::max<int64_t>(0, -iw0), kw1 = std::min(g.kw, g.w - iw0);
        Lane acc = Lane::Zero();
        for (int64_t kh = kh0; kh < kh1; ++kh) {
          const T* xr = x + (n * g.h + ih0 + kh) * g.w;
          const Lane* wr = w.data() + kh * g.kw;
          for (int64_t kw = kw0; kw < kw1; ++kw) acc += xr[iw0 + kw] * wr[kw];
        }
        T* out = y + (row * g.ow + ow) * g.f;
        for (int64_t f = 0; f < g.f; ++f) out[f] = acc(f);
      }
    }
  });
}

}  // namespace

template <typename T>
void Conv2DDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  if (g.f <= 8) return DirectC1Lanes<T, 8>(pool, g, x, filter, y);
  if (g.f <= 16) return DirectC1Lanes<T, 16>(pool, g, x, filter, y);
  ParallelForBlocks(pool, g.n * g.oh, kRowsPerBlock, [&](int64_t r0, int64_t r1) {
    std::vector<T> acc(static_cast<size_t>(g.f * g.ow));
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t n = row / g.oh, oh = row % g.oh;
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const int64_t ih = oh * g.sh - g.pt + kh;
        if (ih < 0 || ih >= g.h) continue;
        const T* xr = x + (n * g.h + ih) * g.w;
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const Span s = ValidColumns(g, kw);
          if (s.hi <= s.lo) continue;
          ConstVec<T> in(xr + s.lo + kw - g.pl, s.hi - s.lo);
          const T* w = filter + (kh * g.kw + kw) * g.f;
          for (int64_t f = 0; f < g.f; ++f) {
            Vec<T>(acc.data() + f * g.ow + s.lo, s.hi - s.lo) += w[f] * in;
          }
        }
      }
      T* out = y + row * g.ow * g.f;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        for (int64_t f = 0; f < g.f; ++f) out[ow * g.f + f] = acc[f * g.ow + ow];
      }
    }
  });
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
          const int64_t ih = oh * g.sh - g.pt + kh;
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
  const int64_t rows = g.n * g.oh, K = g.kh * g.kw * g.f;
  const int64_t nb = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<T> partial(static_cast<size_t>(std::max<int64_t>(nb, 1) * K), T(0));
  ParallelForBlocks(pool, nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> dyt(static_cast<size_t>(g.f * g.ow));
    for (int64_t b = b0; b < b1; ++b) {
      T* acc = partial.data() + b * K;

      for (int64_t row = b * kRowsPerBlock; row < std::min(rows, (b + 1) * kRowsPerBlock); ++row) {
        const int64_t n = row / g.oh, oh = row % g.oh;
        TransposeRow(g, dy + row * g.ow * g.f, dyt.data());
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = oh * g.sh - g.pt + kh;
          if (ih < 0 || ih >= g.h) continue;
          const T* xr = x + (n * g.h + ih) * g.w;
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const Span s = ValidColumns(g, kw);
            if (s.hi <= s.lo) continue;
            ConstVec<T> in(xr + s.lo + kw - g.pl, s.hi - s.lo);
            T* a = acc + (kh * g.kw + kw) * g.f;
            for (int64_t f = 0; f < g.f; ++f) {
              a[f] += (in * ConstVec<T>(dyt.data() + f * g.ow + s.lo, s.hi - s.lo)).sum();
            }
          }
        }
      }
    }
  });
  // Fixed-order sum of the block partials.
  Vec<T> out(dw, K);
  out = ConstVec<T>(partial.data(), K);
  for (int64_t b = 1; b < nb; ++b) out += ConstVec<T>(partial.data() + b * K, K);
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
