// DepthwiseConv2dNative (NHWC input, filter [kh, kw, c, m] -> c * m output channels, strides,
// SAME/VALID, dilations) and DepthwiseConv2dNativeBackpropInput / ...BackpropFilter for
// float32/float64, TF's raw ops with input_sizes / filter_sizes as attributes (a -1 batch in
// input_sizes means "the batch of out_backprop"). Shape checks here; the channel-vectorised
// kernels are in depthwise_conv_kernels.cc.
#include <string>
#include <vector>

#include "kernels/conv_util.h"
#include "kernels/depthwise_conv.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

constexpr char kFwd[] = "DepthwiseConv2dNative";
constexpr char kBackInput[] = "DepthwiseConv2dNativeBackpropInput";
constexpr char kBackFilter[] = "DepthwiseConv2dNativeBackpropFilter";

// Checks ranks, channels and out_backprop (when given) and computes the geometry; unknown
// dims propagate as -1.
Result<DwGeo> Geometry(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                       const char* in_arg, const TensorShape& filter, const char* filter_arg,
                       const TensorShape* dy) {
  TROUPE_ASSIGN_OR_RETURN(Window2D win, ParseWindow(op, attrs, false, /*allow_dilations=*/true));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, in_arg, in, 4));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, filter_arg, filter, 4));
  if (dy) TROUPE_RETURN_IF_ERROR(CheckRank(op, "out_backprop", *dy, 4));
  if (in.unknown_rank() || filter.unknown_rank()) return OpError(op, "ranks must be known");
  DwGeo g{};
  g.n = in.dim(0), g.h = in.dim(1), g.w = in.dim(2), g.c = in.dim(3);
  g.kh = filter.dim(0), g.kw = filter.dim(1), g.m = filter.dim(3);
  if (g.c >= 0 && filter.dim(2) >= 0 && g.c != filter.dim(2)) {
    return OpError(op, "'" + std::string(in_arg) + "' " + in.ToString() + " has " +
                           std::to_string(g.c) + " channels but '" + filter_arg + "' " +
                           filter.ToString() + " expects " + std::to_string(filter.dim(2)) +
                           " (filter is [height, width, in_channels, channel_multiplier])");
  }
  if (g.c < 0) g.c = filter.dim(2);
  for (int d = 0; d < 4; ++d) {
    if (filter.dim(d) == 0) {
      return OpError(op, "'" + std::string(filter_arg) + "' " + filter.ToString() +
                             " is empty; every filter dim must be positive");
    }
  }
  if (g.kh < 0 || g.kw < 0 || g.m < 0) {
    return OpError(op,
                   "filter height, width and multiplier must be known, got " + filter.ToString());
  }
  TROUPE_ASSIGN_OR_RETURN(
      OutSize oh, WindowOutput(op, "height", g.h, DilatedSize(g.kh, win.dh), win.sh, win.padding));
  TROUPE_ASSIGN_OR_RETURN(
      OutSize ow, WindowOutput(op, "width", g.w, DilatedSize(g.kw, win.dw), win.sw, win.padding));
  g.oh = oh.out, g.ow = ow.out, g.pt = oh.pad_before, g.pl = ow.pad_before;
  g.sh = win.sh, g.sw = win.sw, g.dh = win.dh, g.dw = win.dw;
  if (dy) {
    const std::vector<int64_t> want = {g.n, g.oh, g.ow, MulDims(g.c, g.m)};
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

Result<DwGeo> ForwardGeo(Specs in, const AttrMap& attrs) {
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kFwd, in, "input", "filter"));
  return Geometry(kFwd, attrs, in[0].shape, "input", in[1].shape, "filter", nullptr);
}

// Inputs (filter, out_backprop); attr input_sizes.
Result<DwGeo> BackpropInputGeo(Specs in, const AttrMap& attrs) {
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kBackInput, in, "filter", "out_backprop"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape sizes, ConvSizesAttr(kBackInput, attrs, "input_sizes"));
  if (sizes.dim(0) < 0 && !in[1].shape.unknown_rank() && in[1].shape.rank() == 4) {
    sizes.set_dim(0, in[1].shape.dim(0));
  }
  return Geometry(kBackInput, attrs, sizes, "input_sizes", in[0].shape, "filter", &in[1].shape);
}

// Inputs (input, out_backprop); attr filter_sizes.
Result<DwGeo> BackpropFilterGeo(Specs in, const AttrMap& attrs) {
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kBackFilter, in, "input", "out_backprop"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape sizes, ConvSizesAttr(kBackFilter, attrs, "filter_sizes"));
  for (int64_t d : sizes.dims()) {
    if (d < 0) return OpError(kBackFilter, "'filter_sizes' " + sizes.ToString() + " must be known");
  }
  return Geometry(kBackFilter, attrs, in[0].shape, "input", sizes, "filter_sizes", &in[1].shape);
}

TensorShape OutputShape(const DwGeo& g) {
  return TensorShape({g.n, g.oh, g.ow, MulDims(g.c, g.m)});
}
TensorShape InputShape(const DwGeo& g) { return TensorShape({g.n, g.h, g.w, g.c}); }
TensorShape FilterShape(const DwGeo& g) { return TensorShape({g.kh, g.kw, g.c, g.m}); }

using GeoFn = Result<DwGeo> (*)(Specs, const AttrMap&);
using ShapeOf = TensorShape (*)(const DwGeo&);

ShapeFn MakeShapeFn(GeoFn geo, ShapeOf shape) {
  return [geo, shape](Specs in, const AttrMap& attrs) -> Result<SpecList> {
    TROUPE_ASSIGN_OR_RETURN(DwGeo g, geo(in, attrs));
    return SpecList{TensorSpec{shape(g), in[0].dtype, ""}};
  };
}

// Registers one of the three ops: run(pool, geo, input0, input1, output) on checked inputs.
template <typename Run>
void RegisterOne(OpRegistry& r, const char* name, GeoFn geo, ShapeOf shape, Run run) {
  Register(r, {.name = name, .num_inputs = 2, .infer_shapes = MakeShapeFn(geo, shape)},
           [geo, shape, run](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(DwGeo g, geo(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor out,
                                     ctx.AllocateOutput(0, ctx.input(0).dtype(), shape(g)));
             if (out.num_elements() == 0) return Status::OK();
             DispatchFloat(out.dtype(), [&](auto tag) {
               using T = decltype(tag);
               run(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(1).data<T>(), out.data<T>());
             });
             return Status::OK();
           });
}

}  // namespace
}  // namespace kernels

void RegisterDepthwiseConvOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  RegisterOne(r, kFwd, ForwardGeo, OutputShape,
              [](ThreadPool* p, const DwGeo& g, const auto* x, const auto* f, auto* y) {
                DepthwiseForward(p, g, x, f, y);
              });
  RegisterOne(r, kBackInput, BackpropInputGeo, InputShape,
              [](ThreadPool* p, const DwGeo& g, const auto* f, const auto* dy, auto* dx) {
                DepthwiseBackpropInput(p, g, f, dy, dx);
              });
  RegisterOne(r, kBackFilter, BackpropFilterGeo, FilterShape,
              [](ThreadPool* p, const DwGeo& g, const auto* x, const auto* dy, auto* df) {
                DepthwiseBackpropFilter(p, g, x, dy, df);
              });
}

}  // namespace troupe
