// Ops that undo broadcasting in gradients:
//  - BroadcastGradientArgs(s0, s1) -> (r0, r1): TF's op; the axes to sum each operand's
//    gradient over (int32/int64 shape vectors in and out).
//  - SumToShapeOf(grad, like): Troupe's fused form of TF's Sum(grad, r) + Reshape(.., shape(x)):
//    grad summed over the axes along which `like` was broadcast, shaped like `like`.
//  - BroadcastTo(input; shape): TF's op with the shape as an attribute: input copied to
//    `shape` by numpy broadcasting (the gradient of reductions: a copy, exact, one pass).
#include "kernels/broadcast.h"
#include "kernels/elementwise_impl.h"
#include "kernels/kernel_util.h"
#include "kernels/reductions.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

Result<SpecList> SumToShapeOfShape(Specs in, const AttrMap&) {
  static constexpr char kOp[] = "SumToShapeOf";
  TROUPE_RETURN_IF_ERROR(CheckDType(
      kOp, "grad", in[0].dtype, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}));
  const TensorShape& g = in[0].shape;
  const TensorShape& like = in[1].shape;
  if (!g.unknown_rank() && !like.unknown_rank()) {
    TROUPE_ASSIGN_OR_RETURN(TensorShape b, BroadcastShapes(kOp, "like", like, "grad", g));
    if (!b.IsCompatibleWith(g)) {
      return OpError(kOp,
                     "'like' " + like.ToString() + " does not broadcast to 'grad' " + g.ToString());
    }
  }
  return SpecList{TensorSpec{like, in[0].dtype, ""}};
}

Result<SpecList> BroadcastToShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "BroadcastTo";
  TROUPE_RETURN_IF_ERROR(CheckDType(
      kOp, "input", in[0].dtype, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}));
  Result<std::vector<int64_t>> shape = attrs.GetInts("shape");
  if (!shape.ok()) return shape.status().WithContext(kOp);
  const std::vector<int64_t>& dims = *shape;
  for (int64_t d : dims) {
    if (d < 0)
      return OpError(kOp, "'shape' must be fully defined, got " + TensorShape(dims).ToString());
  }
  const TensorShape target(dims);
  if (!in[0].shape.unknown_rank()) {
    TROUPE_ASSIGN_OR_RETURN(TensorShape b,
                            BroadcastShapes(kOp, "input", in[0].shape, "shape", target));
    if (b != target) {
      return OpError(
          kOp, "'input' " + in[0].shape.ToString() + " does not broadcast to " + target.ToString());
    }
  }
  return SpecList{TensorSpec{target, in[0].dtype, ""}};
}

// y = x broadcast to y's shape: BinaryLoop against a broadcast scalar it ignores.
Status BroadcastToKernel(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, BroadcastToShape(InputSpecs(ctx), ctx.attrs()));
  const Tensor& x = ctx.input(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const BroadcastPlan plan = MakeBroadcastPlan(x.shape(), TensorShape{}, y.shape());
  DispatchReal(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T unused{};
    BinaryLoop<T, T>(ctx.pool(), plan, x.data<T>(), &unused, y.data<T>(), 1,
                     [](const auto& a, const auto&) { return a; });
  });
  return Status::OK();
}

Result<SpecList> BroadcastGradientArgsShape(Specs in, const AttrMap&) {
  static constexpr char kOp[] = "BroadcastGradientArgs";
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "s0", in[0].dtype, {DType::kInt32, DType::kInt64}));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "s0", in[0].dtype, "s1", in[1].dtype));
  TROUPE_RETURN_IF_ERROR(CheckRank(kOp, "s0", in[0].shape, 1));
  TROUPE_RETURN_IF_ERROR(CheckRank(kOp, "s1", in[1].shape, 1));
  TensorSpec v{TensorShape({-1}), in[0].dtype, ""};
  return SpecList{v, v};
}

Status WriteIndices(KernelContext& ctx, int index, const std::vector<int64_t>& v) {
  TROUPE_ASSIGN_OR_RETURN(Tensor t,
                          ctx.AllocateOutput(index, ctx.input(0).dtype(),
                                             TensorShape({static_cast<int64_t>(v.size())})));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == DType::kInt32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    } else {
      t.data<int64_t>()[i] = v[i];
    }
  }
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterBroadcastGradOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT: local registration helpers
  Register(r,
           {.name = "SumToShapeOf",
            .num_inputs = 2,
            .num_outputs = 1,
            .infer_shapes = SumToShapeOfShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, SumToShapeOfShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             return SumToShapeInto(ctx.input(0), y, ctx.pool());
           });
  Register(
      r,
      {.name = "BroadcastTo", .num_inputs = 1, .num_outputs = 1, .infer_shapes = BroadcastToShape},
      BroadcastToKernel);
  Register(
      r,
      {.name = "BroadcastGradientArgs",
       .num_inputs = 2,
       .num_outputs = 2,
       .infer_shapes = BroadcastGradientArgsShape,
       .differentiable = false},
      [](KernelContext& ctx) -> Status {
        TROUPE_RETURN_IF_ERROR(BroadcastGradientArgsShape(InputSpecs(ctx), ctx.attrs()).status());
        TROUPE_ASSIGN_OR_RETURN(auto s0, ReadIndexVector(ctx.op_name(), "s0", ctx.input(0)));
        TROUPE_ASSIGN_OR_RETURN(auto s1, ReadIndexVector(ctx.op_name(), "s1", ctx.input(1)));
        TensorShape a(s0), b(s1);
        TROUPE_ASSIGN_OR_RETURN(TensorShape out, BroadcastShapes(ctx.op_name(), "s0", a, "s1", b));
        TROUPE_RETURN_IF_ERROR(WriteIndices(ctx, 0, BroadcastReductionAxes(a, out)));
        return WriteIndices(ctx, 1, BroadcastReductionAxes(b, out));
      });
}

}  // namespace troupe
