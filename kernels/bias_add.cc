// BiasAdd(value [..., C], bias [C]) and BiasAddGrad(out_backprop [..., C]) -> [C] (sum over
// all but the last dim, deterministic via ReduceInto). NHWC/NC only (data_format "NHWC").
#include "kernels/elementwise_impl.h"
#include "kernels/reductions.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

Status CheckFormat(std::string_view op, const AttrMap& attrs) {
  if (!attrs.Has("data_format")) return Status::OK();
  auto f = attrs.GetString("data_format");
  if (!f.ok()) return f.status().WithContext(op);
  if (*f != "NHWC") {
    return OpError(op, "'data_format' is '" + *f + "' but only 'NHWC' is supported");
  }
  return Status::OK();
}

Result<SpecList> BiasAddShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "BiasAdd";
  TROUPE_RETURN_IF_ERROR(CheckFormat(kOp, attrs));
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "value", in[0].dtype, DTypesOf(TypeSet::kReal)));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "value", in[0].dtype, "bias", in[1].dtype));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "value", in[0].shape, 2));
  TROUPE_RETURN_IF_ERROR(CheckRank(kOp, "bias", in[1].shape, 1));
  if (!in[0].shape.unknown_rank()) {
    TROUPE_RETURN_IF_ERROR(CheckDimsMatch(kOp, "value", in[0].shape, in[0].shape.rank() - 1, "bias",
                                          in[1].shape, 0, "channel counts"));
  }
  return SpecList{TensorSpec{in[0].shape, in[0].dtype, ""}};
}

Result<SpecList> BiasAddGradShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "BiasAddGrad";
  TROUPE_RETURN_IF_ERROR(CheckFormat(kOp, attrs));
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "out_backprop", in[0].dtype, DTypesOf(TypeSet::kReal)));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "out_backprop", in[0].shape, 2));
  const int64_t c = in[0].shape.unknown_rank() ? -1 : in[0].shape.dim(in[0].shape.rank() - 1);
  return SpecList{TensorSpec{TensorShape({c}), in[0].dtype, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterBiasOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "BiasAdd", .num_inputs = 2, .infer_shapes = BiasAddShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, BiasAddShape(InputSpecs(ctx), ctx.attrs()));
             const Tensor& v = ctx.input(0);
             const Tensor& b = ctx.input(1);
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, v.dtype(), v.shape()));
             BroadcastPlan plan = MakeBroadcastPlan(v.shape(), b.shape(), v.shape());
             DispatchReal(v.dtype(), [&](auto tag) {
               using T = decltype(tag);
               BinaryLoop<T, T>(ctx.pool(), plan, v.data<T>(), b.data<T>(), y.data<T>(), 1,
                                [](const auto& x, const auto& z) { return x + z; });
             });
             return Status::OK();
           });
  Register(r, {.name = "BiasAddGrad", .num_inputs = 1, .infer_shapes = BiasAddGradShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, BiasAddGradShape(InputSpecs(ctx), ctx.attrs()));
             const Tensor& g = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, g.dtype(), out[0].shape));
             std::vector<int64_t> axes;
             for (int d = 0; d + 1 < g.rank(); ++d) axes.push_back(d);
             return ReduceInto(Reducer::kSum, g, axes, y, ctx.pool());
           });
}

}  // namespace troupe
