#include "kernels/im2col.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

namespace troupe {
namespace kernels {

namespace {

// Short contiguous copies/zero fills: Eigen packets rather than libc calls, which dominate for
// the few-channel runs of early layers (LeNet conv1 copies runs of 5 floats).
template <typename T>
inline void CopyRun(T* dst, const T* src, int64_t n) {
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dst, n) =
      Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(src, n);
}
template <typename T>
inline void ZeroRun(T* dst, int64_t n) {
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dst, n).setZero();
}

}  // namespace

template <typename T>
void Im2ColColumns(const ConvGeo& g, const T* x, int64_t r0, int64_t r1, int64_t k0, int64_t k1,
                   T* col, int64_t ldcol) {
  const int64_t row_len = g.kw * g.c, image = g.h * g.w * g.c;
  const int64_t kh0 = k0 / row_len, kh1 = (k1 + row_len - 1) / row_len;
  GridCursor at(g.oh, g.ow, r0);
  for (int64_t r = r0; r < r1; ++r, at.Next()) {
    const T* img = x + at.n * image;
    T* dst = col + (r - r0) * ldcol;  // dst[k - k0] is column k
    const int64_t ih0 = g.InRow(at.row), iw0 = g.InCol(at.col);
    const bool full_row = g.dw == 1 && iw0 >= 0 && iw0 + g.kw <= g.w;
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      // Columns [lo, hi) of this window row: offsets [lo - base, hi - base) within it.
      const int64_t base = kh * row_len;
      const int64_t lo = std::max(k0, base), hi = std::min(k1, base + row_len);
      const int64_t ih = ih0 + kh * g.dh;
      if (ih < 0 || ih >= g.h) {
        ZeroRun(dst + (lo - k0), hi - lo);
        continue;
      }
      const T* src_row = img + ih * g.w * g.c;
      if (full_row) {
        // The whole window row is inside: one contiguous run.
        CopyRun(dst + (lo - k0), src_row + iw0 * g.c + (lo - base), hi - lo);
        continue;
      }
      for (int64_t kw = (lo - base) / g.c; base + kw * g.c < hi; ++kw) {
        const int64_t t0 = std::max(lo, base + kw * g.c), t1 = std::min(hi, base + (kw + 1) * g.c);
        const int64_t iw = iw0 + kw * g.dw;
        if (iw < 0 || iw >= g.w) {
          ZeroRun(dst + (t0 - k0), t1 - t0);
        } else {
          CopyRun(dst + (t0 - k0), src_row + iw * g.c + (t0 - base - kw * g.c), t1 - t0);
        }
      }
    }
  }
}

template <typename T>
void Im2Col(const ConvGeo& g, const T* x, int64_t r0, int64_t r1, T* col) {
  Im2ColColumns(g, x, r0, r1, 0, g.K(), col, g.K());
}

template <typename T>
void Col2ImAdd(const ConvGeo& g, const T* col, int64_t r0, int64_t r1, T* dx) {
  const int64_t K = g.K(), image = g.h * g.w * g.c;
  GridCursor at(g.oh, g.ow, r0);
  for (int64_t r = r0; r < r1; ++r, at.Next()) {
    T* img = dx + at.n * image;
    const T* src = col + (r - r0) * K;
    const int64_t ih0 = g.InRow(at.row), iw0 = g.InCol(at.col);
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = ih0 + kh * g.dh;
      if (ih < 0 || ih >= g.h) {
        src += g.kw * g.c;
        continue;
      }
      T* row = img + ih * g.w * g.c;
      if (g.dw == 1 && iw0 >= 0 && iw0 + g.kw <= g.w) {
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(row + iw0 * g.c, g.kw * g.c) +=
            Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(src, g.kw * g.c);
        src += g.kw * g.c;
        continue;
      }
      for (int64_t kw = 0; kw < g.kw; ++kw, src += g.c) {
        const int64_t iw = iw0 + kw * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        T* d = row + iw * g.c;
        for (int64_t c = 0; c < g.c; ++c) d[c] += src[c];
      }
    }
  }
}

bool StridedPointwise(const ConvGeo& g) {
  return g.kh == 1 && g.kw == 1 && g.pt == 0 && g.pl == 0 && (g.sh > 1 || g.sw > 1);
}

template <typename T>
void ScatterStrided(const ConvGeo& g, const T* col, int64_t r0, int64_t r1, T* dx) {
  const int64_t image = g.h * g.w * g.c;
  GridCursor at(g.oh, g.ow, r0);
  for (int64_t r = r0; r < r1; ++r, at.Next()) {
    const T* src = col + (r - r0) * g.c;
    T* d = dx + at.n * image + (at.row * g.sh * g.w + at.col * g.sw) * g.c;
    for (int64_t c = 0; c < g.c; ++c) d[c] = T(0) + src[c];
  }
}

// memset, not ZeroRun: these runs are whole rows or gaps of whole pixels (KBs), and glibc's
// string stores write lines without reading them first.
template <typename T>
void ZeroOffGrid(const ConvGeo& g, int64_t n0, int64_t n1, T* dx) {
  const int64_t row = g.w * g.c;
  auto zero = [](T* p, int64_t n) { std::memset(p, 0, static_cast<size_t>(n) * sizeof(T)); };
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t ih = 0; ih < g.h; ++ih) {
      T* line = dx + (n * g.h + ih) * row;
      if (ih % g.sh != 0 || ih / g.sh >= g.oh) {
        zero(line, row);
        continue;
      }
      // The gaps after each grid pixel, up to the next one or the row's end.
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t gap = std::min(g.sw - 1, g.w - 1 - ow * g.sw);
        if (gap > 0) zero(line + (ow * g.sw + 1) * g.c, gap * g.c);
      }
    }
  }
}

template void Im2Col<float>(const ConvGeo&, const float*, int64_t, int64_t, float*);
template void Im2Col<double>(const ConvGeo&, const double*, int64_t, int64_t, double*);
template void Im2ColColumns<float>(const ConvGeo&, const float*, int64_t, int64_t, int64_t, int64_t,
                                   float*, int64_t);
template void Col2ImAdd<float>(const ConvGeo&, const float*, int64_t, int64_t, float*);
template void Col2ImAdd<double>(const ConvGeo&, const double*, int64_t, int64_t, double*);
template void ScatterStrided<float>(const ConvGeo&, const float*, int64_t, int64_t, float*);
template void ScatterStrided<double>(const ConvGeo&, const double*, int64_t, int64_t, double*);
template void ZeroOffGrid<float>(const ConvGeo&, int64_t, int64_t, float*);
template void ZeroOffGrid<double>(const ConvGeo&, int64_t, int64_t, double*);

}  // namespace kernels
}  // namespace troupe
