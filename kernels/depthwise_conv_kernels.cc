// CPU kernels of the depthwise convolution (see depthwise_conv.h). Inner loops run over the
// c * m output channels of one pixel with 32-byte vectors, keeping four vectors of
// accumulators in registers across the filter taps.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/depthwise_conv.h"
#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// One filter tap of one output pixel: `a` and `b` each point at cm contiguous values.
template <typename T>
struct Tap {
  const T* a;
  const T* b;
};

// out[j] = sum over taps of a[j] * b[j] (taps in order), or out[j] += that when `add`.
template <typename T>
void TapSum(const Tap<T>* taps, int64_t nt, int64_t cm, T* out) {
  using V = simd::Vec<T, 32>;
  constexpr int64_t L = simd::kLanes<T, 32>;
  int64_t j = 0;
  for (; j + 4 * L <= cm; j += 4 * L) {
    V a0{}, a1{}, a2{}, a3{};
    for (int64_t t = 0; t < nt; ++t) {
      const T* a = taps[t].a + j;
      const T* b = taps[t].b + j;
      a0 += simd::Load<V>(a) * simd::Load<V>(b);
      a1 += simd::Load<V>(a + L) * simd::Load<V>(b + L);
      a2 += simd::Load<V>(a + 2 * L) * simd::Load<V>(b + 2 * L);
      a3 += simd::Load<V>(a + 3 * L) * simd::Load<V>(b + 3 * L);
    }
    simd::Store(out + j, a0);
    simd::Store(out + j + L, a1);
    simd::Store(out + j + 2 * L, a2);
    simd::Store(out + j + 3 * L, a3);
  }
  for (; j + L <= cm; j += L) {
    V a0{};
    for (int64_t t = 0; t < nt; ++t)
      a0 += simd::Load<V>(taps[t].a + j) * simd::Load<V>(taps[t].b + j);
    simd::Store(out + j, a0);
  }
  for (; j < cm; ++j) {
    T s = 0;
    for (int64_t t = 0; t < nt; ++t) s += taps[t].a[j] * taps[t].b[j];
    out[j] = s;
  }
}

// acc[j] += a[i * as + j] * b[i * bs + j] for i = 0 .. count - 1 in order and j < cm, with the
// running sums held in registers across i.
template <typename T>
void StridedMulAdd(T* acc, const T* a, int64_t as, const T* b, int64_t bs, int64_t count,
                   int64_t cm) {
  using V = simd::Vec<T, 32>;
  constexpr int64_t L = simd::kLanes<T, 32>;
  int64_t j = 0;
  for (; j + 4 * L <= cm; j += 4 * L) {
    V a0 = simd::Load<V>(acc + j), a1 = simd::Load<V>(acc + j + L);
    V a2 = simd::Load<V>(acc + j + 2 * L), a3 = simd::Load<V>(acc + j + 3 * L);
    for (int64_t i = 0; i < count; ++i) {
      const T* pa = a + i * as + j;
      const T* pb = b + i * bs + j;
      a0 += simd::Load<V>(pa) * simd::Load<V>(pb);
      a1 += simd::Load<V>(pa + L) * simd::Load<V>(pb + L);
      a2 += simd::Load<V>(pa + 2 * L) * simd::Load<V>(pb + 2 * L);
      a3 += simd::Load<V>(pa + 3 * L) * simd::Load<V>(pb + 3 * L);
    }
    simd::Store(acc + j, a0);
    simd::Store(acc + j + L, a1);
    simd::Store(acc + j + 2 * L, a2);
    simd::Store(acc + j + 3 * L, a3);
  }
  for (; j + L <= cm; j += L) {
    V a0 = simd::Load<V>(acc + j);
    for (int64_t i = 0; i < count; ++i) {
      a0 += simd::Load<V>(a + i * as + j) * simd::Load<V>(b + i * bs + j);
    }
    simd::Store(acc + j, a0);
  }
  for (; j < cm; ++j) {
    T s = acc[j];
    for (int64_t i = 0; i < count; ++i) s += a[i * as + j] * b[i * bs + j];
    acc[j] = s;
  }
}

#pragma GCC diagnostic pop

template <typename T>
T* Scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Input rows with each channel repeated m times, so taps multiply cm-long runs; with m == 1
// the input itself. Expanded rows live in a ring of (kh - 1) * dh + 1 + sh slots keyed by
// ih, so consecutive output rows, which share all but sh input rows, expand each row once.
template <typename T>
class ExpandedRows {
 public:
  explicit ExpandedRows(const ConvGeo& g) : g_(g), slots_(DilatedSize(g.kh, g.dh) + g.sh) {
    if (g.f > 1) {
      buf_.resize(static_cast<size_t>(slots_ * g.w * g.cm()));
      tag_.assign(static_cast<size_t>(slots_), {nullptr, -1});
    }
  }
  // Prepares rows ih0 + k * dh (k < kh) of `image`: the rows one output row reads.
  void Prepare(const T* image, int64_t ih0) {
    image_ = image;
    if (g_.f == 1) return;
    for (int64_t k = 0; k < g_.kh; ++k) {
      const int64_t ih = ih0 + k * g_.dh;
      if (ih < 0 || ih >= g_.h) continue;
      auto& tag = tag_[static_cast<size_t>(ih % slots_)];
      if (tag.first == image && tag.second == ih) continue;
      tag = {image, ih};
      T* dst = Slot(ih);
      const T* src = image_ + ih * g_.w * g_.c;
      for (int64_t p = 0; p < g_.w * g_.c; ++p) std::fill_n(dst + p * g_.f, g_.f, src[p]);
    }
  }
  // Input row ih (prepared), pixel 0.
  const T* Row(int64_t ih) const {
    return g_.f == 1 ? image_ + ih * g_.w * g_.c : buf_.data() + (ih % slots_) * g_.w * g_.cm();
  }

 private:
  T* Slot(int64_t ih) { return buf_.data() + (ih % slots_) * g_.w * g_.cm(); }

  const ConvGeo& g_;
  const int64_t slots_;
  const T* image_ = nullptr;
  std::vector<T> buf_;
  std::vector<std::pair<const T*, int64_t>> tag_;  // (image, ih) held by each slot
};

// The (filter tap k, output index o) pairs that read input index i along one dim: i + pad -
// k * dilation == o * stride with 0 <= o < out. Returned flat with offsets per i.
struct DimTaps {
  std::vector<int64_t> start;  // taps of i: [start[i], start[i + 1])
  std::vector<int64_t> k, o;
};
DimTaps TapsPerInput(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                     int64_t pad) {
  DimTaps t;
  t.start.push_back(0);
  for (int64_t i = 0; i < in; ++i) {
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t p = i + pad - k * dilation;
      if (p < 0 || p % stride != 0 || p / stride >= out) continue;
      t.k.push_back(k);
      t.o.push_back(p / stride);
    }
    t.start.push_back(static_cast<int64_t>(t.k.size()));
  }
  return t;
}

}  // namespace

template <typename T>
void DepthwiseForward(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  const int64_t cm = g.cm();
  ParallelFor(pool, g.n * g.oh, g.ow * g.kh * g.kw * cm, [&](int64_t r0, int64_t r1) {
    std::vector<Tap<T>> taps(static_cast<size_t>(g.kh * g.kw));
    ExpandedRows<T> rows(g);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.oh, oh = r % g.oh, ih0 = g.InRow(oh);
      rows.Prepare(x + n * g.h * g.w * g.c, ih0);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t iw0 = g.InCol(ow);
        int64_t nt = 0;
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = ih0 + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          const T* row = rows.Row(ih);
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const int64_t iw = iw0 + kw * g.dw;
            if (iw < 0 || iw >= g.w) continue;
            taps[static_cast<size_t>(nt++)] = {row + iw * cm, filter + (kh * g.kw + kw) * cm};
          }
        }
        TapSum(taps.data(), nt, cm, y + (r * g.ow + ow) * cm);
      }
    }
  });
}

template <typename T>
void DepthwiseBackpropInput(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy,
                            T* dx) {
  const int64_t cm = g.cm();
  const DimTaps rows = TapsPerInput(g.h, g.oh, g.kh, g.sh, g.dh, g.pt);
  const DimTaps cols = TapsPerInput(g.w, g.ow, g.kw, g.sw, g.dw, g.pl);
  // Gather form: each input pixel sums the (output pixel, tap) pairs that read it, so no two
  // threads write the same element.
  ParallelFor(pool, g.n * g.h, g.w * g.kh * g.kw * cm, [&](int64_t r0, int64_t r1) {
    std::vector<Tap<T>> taps(static_cast<size_t>(g.kh * g.kw));
    T* acc = g.f > 1 ? Scratch<T>(static_cast<size_t>(cm)) : nullptr;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.h, ih = r % g.h;
      for (int64_t iw = 0; iw < g.w; ++iw) {
        int64_t nt = 0;
        for (int64_t a = rows.start[static_cast<size_t>(ih)];
             a < rows.start[static_cast<size_t>(ih) + 1]; ++a) {
          const int64_t kh = rows.k[static_cast<size_t>(a)];
          const T* dy_row = dy + (n * g.oh + rows.o[static_cast<size_t>(a)]) * g.ow * cm;
          for (int64_t b = cols.start[static_cast<size_t>(iw)];
               b < cols.start[static_cast<size_t>(iw) + 1]; ++b) {
            const int64_t kw = cols.k[static_cast<size_t>(b)];
            taps[static_cast<size_t>(nt++)] = {dy_row + cols.o[static_cast<size_t>(b)] * cm,
                                               filter + (kh * g.kw + kw) * cm};
          }
        }
        T* out = dx + (r * g.w + iw) * g.c;
        if (g.f == 1) {
          TapSum(taps.data(), nt, cm, out);
          continue;
        }
        TapSum(taps.data(), nt, cm, acc);
        for (int64_t c = 0; c < g.c; ++c) {
          T s = 0;
          for (int64_t k = 0; k < g.f; ++k) s += acc[c * g.f + k];
          out[c] = s;
        }
      }
    }
  });
}

template <typename T>
void DepthwiseBackpropFilter(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy, T* df) {
  const int64_t cm = g.cm(), fsize = g.kh * g.kw * cm, rows = g.n * g.oh;
  std::fill(df, df + fsize, T(0));
  if (rows == 0) return;
  // Blocks of ~1M multiply-adds of output rows, each summed into its own partial filter.
  const int64_t row_cost = std::max<int64_t>(1, g.ow * g.kh * g.kw * cm);
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 20) / row_cost, 1, rows);
  const int64_t nb = (rows + block - 1) / block;
  std::unique_ptr<T[]> partial(new T[static_cast<size_t>(nb * fsize)]());
  ParallelForBlocks(pool, nb, 1, [&](int64_t b0, int64_t b1) {
    ExpandedRows<T> xrows(g);
    for (int64_t b = b0; b < b1; ++b) {
      T* part = partial.get() + b * fsize;
      for (int64_t r = b * block; r < std::min(rows, (b + 1) * block); ++r) {
        const int64_t n = r / g.oh, oh = r % g.oh, ih0 = g.InRow(oh);
        xrows.Prepare(x + n * g.h * g.w * g.c, ih0);
        const T* d = dy + r * g.ow * cm;
        for (int64_t kh = 0; kh < g.kh; ++kh) {
          const int64_t ih = ih0 + kh * g.dh;
          if (ih < 0 || ih >= g.h) continue;
          const T* row = xrows.Row(ih);
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            // Output columns whose tap kw lands inside the input row.
            auto iw = [&](int64_t ow) { return g.InCol(ow) + kw * g.dw; };
            int64_t lo = 0, hi = g.ow;
            while (lo < hi && iw(lo) < 0) ++lo;
            while (hi > lo && iw(hi - 1) >= g.w) --hi;
            if (lo == hi) continue;
            StridedMulAdd(part + (kh * g.kw + kw) * cm, row + iw(lo) * cm, g.sw * cm, d + lo * cm,
                          cm, hi - lo, cm);
          }
        }
      }
    }
  });
  for (int64_t b = 0; b < nb; ++b) {
    const T* part = partial.get() + b * fsize;
    for (int64_t i = 0; i < fsize; ++i) df[i] += part[i];
  }
}

#define TROUPE_DW_INSTANTIATE(T)                                                                \
  template void DepthwiseForward<T>(ThreadPool*, const ConvGeo&, const T*, const T*, T*);       \
  template void DepthwiseBackpropInput<T>(ThreadPool*, const ConvGeo&, const T*, const T*, T*); \
  template void DepthwiseBackpropFilter<T>(ThreadPool*, const ConvGeo&, const T*, const T*, T*);
TROUPE_DW_INSTANTIATE(float)
TROUPE_DW_INSTANTIATE(double)
#undef TROUPE_DW_INSTANTIATE

}  // namespace kernels
}  // namespace troupe
