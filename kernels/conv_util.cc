#include "kernels/conv_util.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/conv2d_direct.h"
#include "kernels/kernel_util.h"

namespace troupe {
namespace kernels {
namespace {

Result<std::pair<int64_t, int64_t>> Parse4(std::string_view op, const AttrMap& attrs,
                                           const std::string& name) {
  auto v = attrs.GetInts(name);
  if (!v.ok()) return v.status().WithContext(op);
  const std::vector<int64_t>& s = *v;
  if (s.size() != 4) {
    return OpError(op, "'" + name + "' " + IntsToString(s) +
                           " must have 4 entries [1, height, width, 1] (NHWC)");
  }
  for (int64_t x : s) {
    if (x <= 0) {
      return OpError(
          op, "'" + name + "' " + IntsToString(s) + " must be positive (got zero or negative)");
    }
  }
  if (s[0] != 1 || s[3] != 1) {
    return OpError(
        op, "'" + name + "' " + IntsToString(s) + " must be 1 in the batch and channel dims");
  }
  return std::pair{s[1], s[2]};
}

}  // namespace

Result<Window2D> ParseWindow(std::string_view op, const AttrMap& attrs, bool has_ksize,
                             bool allow_dilations) {
  Window2D w;
  TROUPE_ASSIGN_OR_RETURN(auto strides, Parse4(op, attrs, "strides"));
  w.sh = strides.first;
  w.sw = strides.second;
  if (has_ksize) {
    TROUPE_ASSIGN_OR_RETURN(auto k, Parse4(op, attrs, "ksize"));
    w.kh = k.first;
    w.kw = k.second;
  }
  auto pad = attrs.GetString("padding");
  if (!pad.ok()) return pad.status().WithContext(op);
  if (*pad == "SAME") {
    w.padding = Padding::kSame;
  } else if (*pad == "VALID") {
    w.padding = Padding::kValid;
  } else {
    return OpError(op, "'padding' is '" + *pad + "' but must be 'SAME' or 'VALID'");
  }
  if (attrs.Has("data_format")) {
    auto f = attrs.GetString("data_format");
    if (!f.ok()) return f.status().WithContext(op);
    if (*f != "NHWC") {
      return OpError(op, "'data_format' is '" + *f + "' but only 'NHWC' is supported");
    }
  }
  if (attrs.Has("dilations") && allow_dilations) {
    TROUPE_ASSIGN_OR_RETURN(auto d, Parse4(op, attrs, "dilations"));
    w.dh = d.first;
    w.dw = d.second;
  } else if (attrs.Has("dilations")) {
    auto d = attrs.GetInts("dilations");
    if (!d.ok()) return d.status().WithContext(op);
    for (int64_t x : *d) {
      if (x != 1) {
        return OpError(op, "'dilations' " + IntsToString(*d) + " is not supported (only 1s)");
      }
    }
  }
  return w;
}

Result<OutSize> WindowOutput(std::string_view op, std::string_view what, int64_t in, int64_t k,
                             int64_t stride, Padding padding) {
  OutSize o;
  if (in < 0) return o;
  if (padding == Padding::kValid) {
    if (in < k) {
      return OpError(op, "VALID window of " + std::string(what) + " " + std::to_string(k) +
                             " is larger than the input " + std::string(what) + " " +
                             std::to_string(in) + " (use SAME padding or a smaller window)");
    }
    o.out = (in - k) / stride + 1;
    o.pad_before = 0;
  } else {
    o.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (o.out - 1) * stride + k - in);
    o.pad_before = total / 2;
  }
  return o;
}

Status CheckConvTypes(std::string_view op, Specs in, const char* a0, const char* a1) {
  TROUPE_RETURN_IF_ERROR(CheckDType(op, a0, in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  return CheckSameDType(op, a0, in[0].dtype, a1, in[1].dtype);
}

Result<TensorShape> ConvSizesAttr(std::string_view op, const AttrMap& attrs,
                                  const std::string& name) {
  auto v = attrs.GetInts(name);
  if (!v.ok()) return v.status().WithContext(op);
  if (v->size() != 4) {
    return OpError(op, "'" + name + "' " + IntsToString(*v) + " must have 4 entries");
  }
  for (int64_t d : *v) {
    if (d < -1) return OpError(op, "'" + name + "' " + IntsToString(*v) + " has a negative size");
  }
  return TensorShape(*v);
}

Result<ConvShapes> CheckConvShapes(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                                   const char* in_arg, const TensorShape& filter,
                                   const char* filter_arg, const TensorShape* dy,
                                   const ConvFilterLayout& layout) {
  TROUPE_ASSIGN_OR_RETURN(Window2D win, ParseWindow(op, attrs, false, /*allow_dilations=*/true));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, in_arg, in, 4));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, filter_arg, filter, 4));
  if (dy) TROUPE_RETURN_IF_ERROR(CheckRank(op, "out_backprop", *dy, 4));
  if (in.unknown_rank() || filter.unknown_rank()) return OpError(op, "ranks must be known");
  ConvShapes g{};
  g.n = in.dim(0), g.h = in.dim(1), g.w = in.dim(2), g.c = in.dim(3);
  g.kh = filter.dim(0), g.kw = filter.dim(1), g.last = filter.dim(3);
  if (g.c >= 0 && filter.dim(2) >= 0 && g.c != filter.dim(2)) {
    return OpError(op, "'" + std::string(in_arg) + "' " + in.ToString() + " has " +
                           std::to_string(g.c) + " channels but '" + filter_arg + "' " +
                           filter.ToString() + " expects " + std::to_string(filter.dim(2)) +
                           " (filter is " + layout.layout + ")");
  }
  if (g.c < 0) g.c = filter.dim(2);
  for (int d = 0; d < 4; ++d) {
    if (filter.dim(d) == 0) {
      return OpError(op, "'" + std::string(filter_arg) + "' " + filter.ToString() +
                             " is empty; every filter dim must be positive");
    }
  }
  if (layout.depthwise && (g.kh < 0 || g.kw < 0 || g.last < 0)) {
    return OpError(op,
                   "filter height, width and multiplier must be known, got " + filter.ToString());
  }
  if (g.kh < 0 || g.kw < 0) return OpError(op, "filter height and width must be known");
  TROUPE_ASSIGN_OR_RETURN(
      OutSize oh, WindowOutput(op, "height", g.h, DilatedSize(g.kh, win.dh), win.sh, win.padding));
  TROUPE_ASSIGN_OR_RETURN(
      OutSize ow, WindowOutput(op, "width", g.w, DilatedSize(g.kw, win.dw), win.sw, win.padding));
  g.oh = oh.out, g.ow = ow.out, g.pt = oh.pad_before, g.pl = ow.pad_before;
  g.sh = win.sh, g.sw = win.sw, g.dh = win.dh, g.dw = win.dw;
  if (dy) {
    const int64_t out_channels = layout.depthwise ? MulDims(g.c, g.last) : g.last;
    const std::vector<int64_t> want = {g.n, g.oh, g.ow, out_channels};
    for (int d = 0; d < 4; ++d) {
      const int64_t a = dy->dim(d), b = want[static_cast<size_t>(d)];
      if (a >= 0 && b >= 0 && a != b) {
        return OpError(op, "'out_backprop' " + dy->ToString() + " does not match the forward " +
                               "output " + TensorShape(want).ToString() + " of '" + in_arg + "' " +
                               in.ToString() + " and '" + filter_arg + "' " + filter.ToString());
      }
    }
  }
  return g;
}

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
    const int64_t ih0 = at.row * g.sh - g.pt, iw0 = at.col * g.sw - g.pl;
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
    const int64_t ih0 = at.row * g.sh - g.pt, iw0 = at.col * g.sw - g.pl;
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
