#include "kernels/conv_geometry.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

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
    o.pad_after = total - o.pad_before;
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

namespace {

// g's strides, dilations, output sizes and pads from win, for g's input size and filter size.
Status SetOutputSizes(std::string_view op, const Window2D& win, ConvGeo& g) {
  g.sh = win.sh, g.sw = win.sw, g.dh = win.dh, g.dw = win.dw;
  TROUPE_ASSIGN_OR_RETURN(
      OutSize oh, WindowOutput(op, "height", g.h, DilatedSize(g.kh, g.dh), g.sh, win.padding));
  TROUPE_ASSIGN_OR_RETURN(
      OutSize ow, WindowOutput(op, "width", g.w, DilatedSize(g.kw, g.dw), g.sw, win.padding));
  g.oh = oh.out, g.ow = ow.out, g.pt = oh.pad_before, g.pl = ow.pad_before;
  g.pb = oh.pad_after, g.pr = ow.pad_after;
  return Status::OK();
}

}  // namespace

Result<ConvGeo> ConvGeometry(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                             const char* in_arg, const TensorShape& filter, const char* filter_arg,
                             const TensorShape* dy, const ConvFilterLayout& layout) {
  TROUPE_ASSIGN_OR_RETURN(Window2D win, ParseWindow(op, attrs, false, /*allow_dilations=*/true));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, in_arg, in, 4));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, filter_arg, filter, 4));
  if (dy) TROUPE_RETURN_IF_ERROR(CheckRank(op, "out_backprop", *dy, 4));
  if (in.unknown_rank() || filter.unknown_rank()) return OpError(op, "ranks must be known");
  ConvGeo g{};
  g.n = in.dim(0), g.h = in.dim(1), g.w = in.dim(2), g.c = in.dim(3);
  g.kh = filter.dim(0), g.kw = filter.dim(1), g.f = filter.dim(3);
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
  if (layout.depthwise && (g.kh < 0 || g.kw < 0 || g.f < 0)) {
    return OpError(op,
                   "filter height, width and multiplier must be known, got " + filter.ToString());
  }
  if (g.kh < 0 || g.kw < 0) return OpError(op, "filter height and width must be known");
  TROUPE_RETURN_IF_ERROR(SetOutputSizes(op, win, g));
  if (dy) {
    const int64_t out_channels = layout.depthwise ? MulDims(g.c, g.f) : g.f;
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

Result<ConvGeo> PoolGeometry(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                             const char* in_arg) {
  TROUPE_ASSIGN_OR_RETURN(Window2D win, ParseWindow(op, attrs, true));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, in_arg, in, 4));
  if (in.unknown_rank()) return OpError(op, "'" + std::string(in_arg) + "' rank must be known");
  ConvGeo g{};
  g.n = in.dim(0), g.h = in.dim(1), g.w = in.dim(2), g.c = in.dim(3);
  g.kh = win.kh, g.kw = win.kw, g.f = g.c;
  TROUPE_RETURN_IF_ERROR(SetOutputSizes(op, win, g));
  return g;
}

Result<ConvGeo> BackpropInputGeometry(std::string_view op, Specs in, const AttrMap& attrs,
                                      const ConvFilterLayout& layout) {
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(op, in, "filter", "out_backprop"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape sizes, ConvSizesAttr(op, attrs, "input_sizes"));
  if (sizes.dim(0) < 0 && !in[1].shape.unknown_rank() && in[1].shape.rank() == 4) {
    sizes.set_dim(0, in[1].shape.dim(0));
  }
  return ConvGeometry(op, attrs, sizes, "input_sizes", in[0].shape, "filter", &in[1].shape, layout);
}

Result<ConvGeo> BackpropFilterGeometry(std::string_view op, Specs in, const AttrMap& attrs,
                                       const ConvFilterLayout& layout) {
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(op, in, "input", "out_backprop"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape sizes, ConvSizesAttr(op, attrs, "filter_sizes"));
  for (int64_t d : sizes.dims()) {
    if (d < 0) return OpError(op, "'filter_sizes' " + sizes.ToString() + " must be known");
  }
  return ConvGeometry(op, attrs, in[0].shape, "input", sizes, "filter_sizes", &in[1].shape, layout);
}

}  // namespace kernels
}  // namespace troupe
