// GPU elementwise kernels: binary arithmetic with numpy broadcasting (Add, AddV2, Sub, Mul, Div,
// RealDiv, DivNoNan, Maximum, Minimum, Pow, SquaredDifference), comparisons (bool out), unary
// math, activations (Relu, Relu6, Elu, LeakyRelu, Tanh, Sigmoid, Erf) and their gradient ops, and
// BroadcastTo (the gradient of Sum and Mean).
// Shapes and errors come from the ops' registered shape functions; the math is in ew_functors.h,
// the loops in ew_launch.h.
#include <type_traits>

#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/ew_functors.h"
#include "kernels/cuda/ew_launch.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {
namespace {

enum class Types { kFloat, kReal };  // {f32, f64} or {f32, f64, i32, i64}

// Dispatch at compile time so float-only functors are never instantiated for integers.
template <Types kSet, typename Fn>
bool DispatchTypes(DType dtype, Fn&& fn) {
  if constexpr (kSet == Types::kFloat) {
    return kernels::DispatchFloat(dtype, fn);
  } else {
    return kernels::DispatchReal(dtype, fn);
  }
}

const char* TypesName(Types set) {
  return set == Types::kFloat ? "float32, float64" : "float32, float64, int32, int64";
}

// F: a functor from ew_functors.h; kBoolOut for comparisons.
template <typename F, Types kSet, bool kBoolOut = false>
void RegisterBinaryGpu(OpRegistry& r, const std::string& op) {
  ShapeFn shape_fn = ShapeFnOf(r, op);
  RegisterGpu(r, op, [shape_fn](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    const kernels::BroadcastPlan plan = kernels::MakeBroadcastPlan(a.shape(), b.shape(), y.shape());
    Status status;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      using Tout = std::conditional_t<kBoolOut, bool, T>;
      status = LaunchBinary<T, Tout>(ctx, plan, a.data<T>(), b.data<T>(), y.data<Tout>(), F{});
    };
    if (!DispatchTypes<kSet>(a.dtype(), run)) {
      return UnsupportedDType(ctx, a.dtype(), TypesName(kSet));
    }
    return status;
  });
}

template <typename F, Types kSet>
void RegisterUnaryGpu(OpRegistry& r, const std::string& op) {
  ShapeFn shape_fn = ShapeFnOf(r, op);
  RegisterGpu(r, op, [shape_fn](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, x.dtype(), x.shape()));
    Status status;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      status = LaunchUnary<T, T>(ctx, x.data<T>(), y.data<T>(), x.num_elements(), F{});
    };
    if (!DispatchTypes<kSet>(x.dtype(), run)) {
      return UnsupportedDType(ctx, x.dtype(), TypesName(kSet));
    }
    return status;
  });
}

// LeakyRelu / LeakyReluGrad: the functor carries alpha (a float attribute, 0.2 when absent).
template <bool kGrad>
void RegisterLeakyReluGpu(OpRegistry& r, const std::string& op) {
  ShapeFn shape_fn = ShapeFnOf(r, op);
  RegisterGpu(r, op, [shape_fn](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
    float alpha = 0.2f;
    if (ctx.attrs().Has("alpha")) alpha = static_cast<float>(*ctx.attrs().GetFloat("alpha"));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, x.dtype(), x.shape()));
    Status status;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kGrad) {
        const kernels::BroadcastPlan plan =
            kernels::MakeBroadcastPlan(x.shape(), ctx.input(1).shape(), y.shape());
        status = LaunchBinary<T, T>(ctx, plan, x.data<T>(), ctx.input(1).data<T>(), y.data<T>(),
                                    LeakyReluGradF<T>{static_cast<T>(alpha)});
      } else {
        status = LaunchUnary<T, T>(ctx, x.data<T>(), y.data<T>(), x.num_elements(),
                                   LeakyReluF<T>{static_cast<T>(alpha)});
      }
    };
    if (!kernels::DispatchFloat(x.dtype(), run)) {
      return UnsupportedDType(ctx, x.dtype(), TypesName(Types::kFloat));
    }
    return status;
  });
}

// BroadcastTo (kernels/broadcast_grad.cc): the CPU's broadcast plan of x against a scalar that
// the functor ignores, so each output element is a copy of the input element it maps to.
struct FirstF {
  template <typename T>
  __device__ T operator()(T a, T) const {
    return a;
  }
};

void RegisterBroadcastToGpu(OpRegistry& r) {
  ShapeFn shape_fn = ShapeFnOf(r, "BroadcastTo");
  RegisterGpu(r, "BroadcastTo", [shape_fn](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    const kernels::BroadcastPlan plan =
        kernels::MakeBroadcastPlan(x.shape(), TensorShape{}, y.shape());
    Status status;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      status = LaunchBinary<T, T>(ctx, plan, x.data<T>(), x.data<T>(), y.data<T>(), FirstF{});
    };
    if (!kernels::DispatchReal(x.dtype(), run)) {
      return UnsupportedDType(ctx, x.dtype(), TypesName(Types::kReal));
    }
    return status;
  });
}

}  // namespace
}  // namespace gpu_ew

void RegisterGpuElementwiseKernels(OpRegistry& r) {
  using namespace gpu_ew;  // NOLINT: functor names
  // Binary arithmetic (elementwise.cc).
  RegisterBinaryGpu<AddF, Types::kReal>(r, "Add");
  RegisterBinaryGpu<AddF, Types::kReal>(r, "AddV2");
  RegisterBinaryGpu<SubF, Types::kReal>(r, "Sub");
  RegisterBinaryGpu<MulF, Types::kReal>(r, "Mul");
  RegisterBinaryGpu<DivF, Types::kFloat>(r, "Div");
  RegisterBinaryGpu<DivF, Types::kFloat>(r, "RealDiv");
  RegisterBinaryGpu<DivNoNanF, Types::kFloat>(r, "DivNoNan");
  RegisterBinaryGpu<MaximumF, Types::kReal>(r, "Maximum");
  RegisterBinaryGpu<MinimumF, Types::kReal>(r, "Minimum");
  RegisterBinaryGpu<PowF, Types::kFloat>(r, "Pow");
  RegisterBinaryGpu<SquaredDifferenceF, Types::kReal>(r, "SquaredDifference");
  // Comparisons (compare.cc).
  RegisterBinaryGpu<EqualF, Types::kReal, true>(r, "Equal");
  RegisterBinaryGpu<NotEqualF, Types::kReal, true>(r, "NotEqual");
  RegisterBinaryGpu<LessF, Types::kReal, true>(r, "Less");
  RegisterBinaryGpu<LessEqualF, Types::kReal, true>(r, "LessEqual");
  RegisterBinaryGpu<GreaterF, Types::kReal, true>(r, "Greater");
  RegisterBinaryGpu<GreaterEqualF, Types::kReal, true>(r, "GreaterEqual");
  // Unary math (unary.cc).
  RegisterUnaryGpu<NegF, Types::kReal>(r, "Neg");
  RegisterUnaryGpu<AbsF, Types::kReal>(r, "Abs");
  RegisterUnaryGpu<SignF, Types::kReal>(r, "Sign");
  RegisterUnaryGpu<SquareF, Types::kReal>(r, "Square");
  RegisterUnaryGpu<SqrtF, Types::kFloat>(r, "Sqrt");
  RegisterUnaryGpu<RsqrtF, Types::kFloat>(r, "Rsqrt");
  RegisterUnaryGpu<ReciprocalF, Types::kFloat>(r, "Reciprocal");
  RegisterUnaryGpu<ExpF, Types::kFloat>(r, "Exp");
  RegisterUnaryGpu<LogF, Types::kFloat>(r, "Log");
  RegisterBinaryGpu<SqrtGradF, Types::kFloat>(r, "SqrtGrad");
  RegisterBinaryGpu<RsqrtGradF, Types::kFloat>(r, "RsqrtGrad");
  RegisterBinaryGpu<ReciprocalGradF, Types::kFloat>(r, "ReciprocalGrad");
  // Activations (activations.cc).
  RegisterUnaryGpu<ReluF, Types::kReal>(r, "Relu");
  RegisterUnaryGpu<TanhF, Types::kFloat>(r, "Tanh");
  RegisterUnaryGpu<SigmoidF, Types::kFloat>(r, "Sigmoid");
  RegisterBinaryGpu<ReluGradF, Types::kReal>(r, "ReluGrad");
  RegisterBinaryGpu<TanhGradF, Types::kFloat>(r, "TanhGrad");
  RegisterBinaryGpu<SigmoidGradF, Types::kFloat>(r, "SigmoidGrad");
  RegisterUnaryGpu<ErfF, Types::kFloat>(r, "Erf");
  RegisterUnaryGpu<EluF, Types::kFloat>(r, "Elu");
  RegisterUnaryGpu<Relu6F, Types::kReal>(r, "Relu6");
  RegisterBinaryGpu<EluGradF, Types::kFloat>(r, "EluGrad");
  RegisterBinaryGpu<Relu6GradF, Types::kReal>(r, "Relu6Grad");
  RegisterLeakyReluGpu<false>(r, "LeakyRelu");
  RegisterLeakyReluGpu<true>(r, "LeakyReluGrad");
  RegisterBroadcastToGpu(r);
}

}  // namespace troupe
