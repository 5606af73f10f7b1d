// The ops Conv2D (NHWC input, HWIO filter, SAME/VALID, strides, dilations),
// Conv2DBackpropInput and Conv2DBackpropFilter, float32/float64: shape functions and CPU
// registration. The TF input_sizes / filter_sizes tensors are attributes here (a -1 batch in
// input_sizes means "the batch of out_backprop"). Geometry: conv_geometry.h; the CPU kernels and
// which path each call takes: conv2d_cpu.h.
#include "kernels/conv2d_cpu.h"
#include "kernels/conv_geometry.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

constexpr ConvFilterLayout kLayout{"[height, width, in_channels, out_channels]"};

Result<ConvGeo> ForwardGeo(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                           const TensorShape& filter) {
  return ConvGeometry(op, attrs, in, "input", filter, "filter", nullptr, kLayout);
}

Result<SpecList> Conv2DShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Conv2D";
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kOp, in, "input", "filter"));
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, ForwardGeo(kOp, attrs, in[0].shape, in[1].shape));
  return SpecList{TensorSpec{TensorShape({g.n, g.oh, g.ow, g.f}), in[0].dtype, ""}};
}

// Inputs (filter, out_backprop); attr input_sizes.
Result<ConvGeo> BackpropInputGeo(Specs in, const AttrMap& attrs) {
  return BackpropInputGeometry("Conv2DBackpropInput", in, attrs, kLayout);
}

Result<SpecList> BackpropInputShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropInputGeo(in, attrs));
  return SpecList{TensorSpec{TensorShape({g.n, g.h, g.w, g.c}), in[0].dtype, ""}};
}

// Inputs (input, out_backprop); attr filter_sizes.
Result<ConvGeo> BackpropFilterGeo(Specs in, const AttrMap& attrs) {
  return BackpropFilterGeometry("Conv2DBackpropFilter", in, attrs, kLayout);
}

Result<SpecList> BackpropFilterShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropFilterGeo(in, attrs));
  return SpecList{TensorSpec{TensorShape({g.kh, g.kw, g.c, g.f}), in[0].dtype, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterConv2DOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "Conv2D", .num_inputs = 2, .infer_shapes = Conv2DShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, Conv2DShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(ConvGeo g,
                                     ForwardGeo(ctx.op_name(), ctx.attrs(), ctx.input(0).shape(),
                                                ctx.input(1).shape()));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             DispatchFloat(y.dtype(), [&](auto tag) {
               using T = decltype(tag);
               Conv2DForward<T>(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(1).data<T>(),
                                y.data<T>());
             });
             return Status::OK();
           });
  Register(r, {.name = "Conv2DBackpropInput", .num_inputs = 2, .infer_shapes = BackpropInputShape},
           [](KernelContext& ctx) -> Status {
             const SpecList in = InputSpecs(ctx);
             TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropInputGeo(in, ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(
                 Tensor dx, ctx.AllocateOutput(0, in[0].dtype, TensorShape({g.n, g.h, g.w, g.c})));
             DispatchFloat(dx.dtype(), [&](auto tag) {
               using T = decltype(tag);
               Conv2DBackpropInput<T>(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(1).data<T>(),
                                      dx.data<T>());
             });
             return Status::OK();
           });
  Register(
      r, {.name = "Conv2DBackpropFilter", .num_inputs = 2, .infer_shapes = BackpropFilterShape},
      [](KernelContext& ctx) -> Status {
        const SpecList in = InputSpecs(ctx);
        TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropFilterGeo(in, ctx.attrs()));
        TROUPE_ASSIGN_OR_RETURN(
            Tensor dw, ctx.AllocateOutput(0, in[0].dtype, TensorShape({g.kh, g.kw, g.c, g.f})));
        DispatchFloat(dw.dtype(), [&](auto tag) {
          using T = decltype(tag);
          Conv2DBackpropFilter<T>(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(1).data<T>(),
                                  dw.data<T>());
        });
        return Status::OK();
      });
}

}  // namespace troupe
