// Comparisons with broadcasting, returning bool: Equal, NotEqual, Less, LessEqual, Greater,
// GreaterEqual.
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {

using kernels::RegisterBinary;
using kernels::TypeSet;

void RegisterCompareOps(OpRegistry& r) {
  RegisterBinary<true>(r, "Equal", TypeSet::kReal, "x", "y", true, 1,
                       [](const auto& x, const auto& y) { return x == y; });
  RegisterBinary<true>(r, "NotEqual", TypeSet::kReal, "x", "y", true, 1,
                       [](const auto& x, const auto& y) { return x != y; });
  RegisterBinary<true>(r, "Less", TypeSet::kReal, "x", "y", true, 1,
                       [](const auto& x, const auto& y) { return x < y; });
  RegisterBinary<true>(r, "LessEqual", TypeSet::kReal, "x", "y", true, 1,
                       [](const auto& x, const auto& y) { return x <= y; });
  RegisterBinary<true>(r, "Greater", TypeSet::kReal, "x", "y", true, 1,
                       [](const auto& x, const auto& y) { return x > y; });
  RegisterBinary<true>(r, "GreaterEqual", TypeSet::kReal, "x", "y", true, 1,
                       [](const auto& x, const auto& y) { return x >= y; });
}

}  // namespace troupe

// ArgMax(input; attr axis, attr output_type = int64): index of the first maximum along axis.
namespace troupe {
namespace kernels {
namespace {

Result<SpecList> ArgMaxShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "ArgMax";
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "input", in[0].dtype, DTypesOf(TypeSet::kReal)));
  auto axis = attrs.GetInt("axis");
  if (!axis.ok()) return axis.status().WithContext(kOp);
  DType out_type = attrs.Has("output_type") ? *attrs.GetDType("output_type") : DType::kInt64;
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "output_type", out_type, {DType::kInt32, DType::kInt64}));
  if (in[0].shape.unknown_rank()) return SpecList{TensorSpec{in[0].shape, out_type, ""}};
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "input", in[0].shape, 1));
  TROUPE_ASSIGN_OR_RETURN(int a, NormalizeAxis(kOp, "axis", *axis, in[0].shape.rank()));
  if (in[0].shape.dim(a) == 0) {
    return OpError(
        kOp, "'input' " + in[0].shape.ToString() + " is empty along axis " + std::to_string(a));
  }
  TensorShape out = in[0].shape;
  out.RemoveDim(a);
  return SpecList{TensorSpec{out, out_type, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterArgMaxOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(
      r, {.name = "ArgMax", .num_inputs = 1, .infer_shapes = ArgMaxShape, .differentiable = false},
      [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(SpecList out, ArgMaxShape(InputSpecs(ctx), ctx.attrs()));
        const Tensor& x = ctx.input(0);
        const int axis = *NormalizeAxis("ArgMax", "axis", *ctx.attrs().GetInt("axis"), x.rank());
        int64_t A = 1, R = x.dim(axis), B = 1;
        for (int d = 0; d < axis; ++d) A *= x.dim(d);
        for (int d = axis + 1; d < x.rank(); ++d) B *= x.dim(d);
        TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
        DispatchReal(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const T* in = x.data<T>();
          ParallelFor(ctx.pool(), A * B, R, [&](int64_t begin, int64_t end) {
            for (int64_t u = begin; u < end; ++u) {
              const int64_t a = u / B, b = u % B;
              const T* p = in + a * R * B + b;
              // The best value stays in a register (re-loading p[best * B] made each step
              // wait on the previous compare); the same first-maximum semantics.
              int64_t best = 0;
              T best_value = p[0];
              for (int64_t r = 1; r < R; ++r) {
                const T v = p[r * B];
                if (v > best_value) best = r, best_value = v;
              }
              if (y.dtype() == DType::kInt32) {
                y.data<int32_t>()[u] = static_cast<int32_t>(best);
              } else {
                y.data<int64_t>()[u] = best;
              }
            }
          });
        });
        return Status::OK();
      });
}

}  // namespace troupe
