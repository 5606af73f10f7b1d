// AddRelu(x, y) = Relu(x + y) for equal shapes (f32, f64): the residual join of ResNet blocks in
// one pass. Each element is rounded once by the add and then rectified as the Relu op does
// (Eigen's max(v, 0)), so the result has the bits of AddV2 followed by Relu, without the
// intermediate sum. Its gradient is ReluGrad(dy, output) for both inputs (graph/nn_grad.cc).
//
// AddReluGrad(g1, g2, output) = ReluGrad(AddN(g1, g2), output): that gradient when dy is the sum
// of two contributions (the block's output feeds the next block's convolution and its skip
// path), in one pass: (g1 + g2) * (output > 0), the two ops' arithmetic, so the same bits
// (-0 and NaN included).

#include "kernels/elementwise_forwarding.h"
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace {

Result<kernels::SpecList> AddReluGradShape(kernels::Specs in, const AttrMap&) {
  static constexpr char kOp[] = "AddReluGrad";
  static constexpr const char* kArgs[] = {"g1", "g2", "output"};
  TROUPE_RETURN_IF_ERROR(
      kernels::CheckDType(kOp, "g1", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TensorShape shape = in[0].shape;
  for (size_t i = 1; i < 3; ++i) {
    TROUPE_RETURN_IF_ERROR(kernels::CheckSameDType(kOp, "g1", in[0].dtype, kArgs[i], in[i].dtype));
    TROUPE_RETURN_IF_ERROR(kernels::CheckSameShape(kOp, "g1", in[0].shape, kArgs[i], in[i].shape));
    TROUPE_ASSIGN_OR_RETURN(shape, shape.MergeWith(in[i].shape));
  }
  return kernels::SpecList{TensorSpec{shape, in[0].dtype, ""}};
}

// One pass; element i reads only element i of each input before writing it, so the output may
// be any dead input's buffer (elementwise_forwarding.h).
template <typename T>
void AddReluGradInto(KernelContext& ctx, Tensor& out) {
  const T* g1 = ctx.input(0).data<T>();
  const T* g2 = ctx.input(1).data<T>();
  const T* y = ctx.input(2).data<T>();
  T* o = out.data<T>();
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  kernels::ParallelFor(ctx.pool(), out.num_elements(), 2, [&](int64_t b, int64_t e) {
    // ReluGrad's own expression (activations.cc): a scalar loop compiles to a branch per
    // element, which random signs mispredict half the time.
    Eigen::Map<const Array> a(g1 + b, e - b), c(g2 + b, e - b), f(y + b, e - b);
    Eigen::Map<Array>(o + b, e - b) = (a + c) * (f > T(0)).template cast<T>();
  });
}

}  // namespace

void RegisterAddReluOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  RegisterBinary(r, "AddRelu", TypeSet::kFloat, "x", "y", /*broadcast=*/false, 2,
                 [](const auto& a, const auto& b) {
                   using T = typename std::decay_t<decltype(a)>::Scalar;
                   return (a + b).max(T(0));
                 });
  MarkOutputMayAliasInput("AddReluGrad");
  Register(
      r,
      {.name = "AddReluGrad", .num_inputs = 3, .num_outputs = 1, .infer_shapes = AddReluGradShape},
      [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(SpecList out, AddReluGradShape(InputSpecs(ctx), ctx.attrs()));
        TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
        DispatchFloat(t.dtype(), [&](auto tag) { AddReluGradInto<decltype(tag)>(ctx, t); });
        return Status::OK();
      });
}

}  // namespace troupe
