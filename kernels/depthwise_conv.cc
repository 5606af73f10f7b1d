// DepthwiseConv2dNative (NHWC input, filter [kh, kw, c, m] -> c * m output channels, strides,
// SAME/VALID, dilations) and DepthwiseConv2dNativeBackpropInput / ...BackpropFilter for
// float32/float64, TF's raw ops with input_sizes / filter_sizes as attributes (a -1 batch in
// input_sizes means "the batch of out_backprop"). Shape checks here; the channel-vectorised
// kernels are in depthwise_conv_kernels.cc.
#include <string>
#include <vector>

#include "kernels/conv_geometry.h"
#include "kernels/depthwise_conv.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

constexpr char kFwd[] = "DepthwiseConv2dNative";
constexpr char kBackInput[] = "DepthwiseConv2dNativeBackpropInput";
constexpr char kBackFilter[] = "DepthwiseConv2dNativeBackpropFilter";

constexpr ConvFilterLayout kLayout{"[height, width, in_channels, channel_multiplier]", true};

Result<ConvGeo> ForwardGeo(Specs in, const AttrMap& attrs) {
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kFwd, in, "input", "filter"));
  return ConvGeometry(kFwd, attrs, in[0].shape, "input", in[1].shape, "filter", nullptr, kLayout);
}
Result<ConvGeo> BackpropInputGeo(Specs in, const AttrMap& attrs) {
  return BackpropInputGeometry(kBackInput, in, attrs, kLayout);
}
Result<ConvGeo> BackpropFilterGeo(Specs in, const AttrMap& attrs) {
  return BackpropFilterGeometry(kBackFilter, in, attrs, kLayout);
}

TensorShape OutputShape(const ConvGeo& g) {
  return TensorShape({g.n, g.oh, g.ow, MulDims(g.c, g.f)});
}
TensorShape InputShape(const ConvGeo& g) { return TensorShape({g.n, g.h, g.w, g.c}); }
TensorShape FilterShape(const ConvGeo& g) { return TensorShape({g.kh, g.kw, g.c, g.f}); }

using GeoFn = Result<ConvGeo> (*)(Specs, const AttrMap&);
using ShapeOf = TensorShape (*)(const ConvGeo&);

ShapeFn MakeShapeFn(GeoFn geo, ShapeOf shape) {
  return [geo, shape](Specs in, const AttrMap& attrs) -> Result<SpecList> {
    TROUPE_ASSIGN_OR_RETURN(ConvGeo g, geo(in, attrs));
    return SpecList{TensorSpec{shape(g), in[0].dtype, ""}};
  };
}

// Registers one of the three ops: run(pool, geo, input0, input1, output) on checked inputs.
template <typename Run>
void RegisterOne(OpRegistry& r, const char* name, GeoFn geo, ShapeOf shape, Run run) {
  Register(r, {.name = name, .num_inputs = 2, .infer_shapes = MakeShapeFn(geo, shape)},
           [geo, shape, run](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(ConvGeo g, geo(InputSpecs(ctx), ctx.attrs()));
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
              [](ThreadPool* p, const ConvGeo& g, const auto* x, const auto* f, auto* y) {
                DepthwiseForward(p, g, x, f, y);
              });
  RegisterOne(r, kBackInput, BackpropInputGeo, InputShape,
              [](ThreadPool* p, const ConvGeo& g, const auto* f, const auto* dy, auto* dx) {
                DepthwiseBackpropInput(p, g, f, dy, dx);
              });
  RegisterOne(r, kBackFilter, BackpropFilterGeo, FilterShape,
              [](ThreadPool* p, const ConvGeo& g, const auto* x, const auto* dy, auto* df) {
                DepthwiseBackpropFilter(p, g, x, dy, df);
              });
}

}  // namespace troupe
