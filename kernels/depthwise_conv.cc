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
  TROUPE_ASSIGN_OR_RETURN(
      ConvShapes s,
      CheckConvShapes(op, attrs, in, in_arg, filter, filter_arg, dy,
                      ConvFilterLayout{"[height, width, in_channels, channel_multiplier]", true}));
  return DwGeo{s.n,  s.h,  s.w,  s.c,  s.kh, s.kw, s.last, s.oh,
               s.ow, s.sh, s.sw, s.pt, s.pl, s.dh, s.dw};
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
