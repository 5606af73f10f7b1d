// Activations and their gradient kernels (TF names, argument order and formulas):
// Relu, Relu6, Elu, LeakyRelu (attr alpha, default 0.2), Tanh, Sigmoid;
// ReluGrad / Relu6Grad / LeakyReluGrad (gradients, features), EluGrad (gradients, outputs),
// TanhGrad / SigmoidGrad (y, dy).
//
// TF writes the piecewise ones with select(); Eigen 3.4's select() has no vector path, so they
// are written as min/max blends that give the same values (a select's untaken branch, e.g.
// exp(x) of a large x, never reaches the result).
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace {

using kernels::RegisterBinary;
using kernels::RegisterUnary;
using kernels::TypeSet;

// LeakyRelu's alpha, 0.2 when absent. TF's attribute is a float32, so it is rounded to float
// before use in float64 kernels too (same bits as TF).
Result<double> Alpha(std::string_view op, const AttrMap& attrs) {
  if (!attrs.Has("alpha")) return static_cast<double>(0.2f);
  auto a = attrs.GetFloat("alpha");
  if (!a.ok()) return a.status().WithContext(op);
  return static_cast<double>(static_cast<float>(*a));
}

void RegisterLeakyRelu(OpRegistry& r) {
  using kernels::SpecList;
  const std::string fwd = "LeakyRelu", grad = "LeakyReluGrad";
  ShapeFn fwd_shape = [base = kernels::UnaryShapeFn(fwd, TypeSet::kFloat)](
                          kernels::Specs in, const AttrMap& attrs) -> Result<SpecList> {
    TROUPE_RETURN_IF_ERROR(Alpha("LeakyRelu", attrs).status());
    return base(in, attrs);
  };
  ShapeFn grad_shape =
      [base = kernels::BinaryShapeFn(grad, TypeSet::kFloat, "gradients", "features", false, false)](
          kernels::Specs in, const AttrMap& attrs) -> Result<SpecList> {
    TROUPE_RETURN_IF_ERROR(Alpha("LeakyReluGrad", attrs).status());
    return base(in, attrs);
  };
  kernels::Register(
      r, {.name = fwd, .num_inputs = 1, .infer_shapes = fwd_shape},
      [fwd_shape](KernelContext& ctx) -> Status {
        TROUPE_RETURN_IF_ERROR(fwd_shape(kernels::InputSpecs(ctx), ctx.attrs()).status());
        const double alpha = *Alpha(ctx.op_name(), ctx.attrs());
        const Tensor& x = ctx.input(0);
        TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), x.shape()));
        kernels::DispatchFloat(x.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const T a = static_cast<T>(alpha);
          kernels::UnaryLoop<T, T>(ctx.pool(), x.data<T>(), y.data<T>(), x.num_elements(), 2,
                                   [a](const auto& v) { return v.max(T(0)) + v.min(T(0)) * a; });
        });
        return Status::OK();
      });
  kernels::Register(
      r, {.name = grad, .num_inputs = 2, .infer_shapes = grad_shape},
      [grad_shape](KernelContext& ctx) -> Status {
        TROUPE_RETURN_IF_ERROR(grad_shape(kernels::InputSpecs(ctx), ctx.attrs()).status());
        const double alpha = *Alpha(ctx.op_name(), ctx.attrs());
        const Tensor& g = ctx.input(0);
        const Tensor& f = ctx.input(1);
        TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, g.dtype(), g.shape()));
        kernels::DispatchFloat(g.dtype(), [&](auto tag) {
          using T = decltype(tag);
          const T a = static_cast<T>(alpha);
          const T* gp = g.data<T>();
          const T* fp = f.data<T>();
          T* out = dx.data<T>();
          kernels::ParallelFor(ctx.pool(), g.num_elements(), 3, [&](int64_t b, int64_t e) {
            kernels::ConstArrayMap<T> gv(gp + b, e - b), fv(fp + b, e - b);
            // g where f > 0, else g * alpha (m is 1 or 0, so both products are exact).
            auto m = (fv > T(0)).template cast<T>();
            kernels::ArrayMap<T>(out + b, e - b) = gv * (m + (T(1) - m) * a);
          });
        });
        return Status::OK();
      });
}

}  // namespace

void RegisterGeluOps(OpRegistry& r);  // kernels/gelu.cc

void RegisterActivationOps(OpRegistry& r) {
  RegisterUnary(r, "Relu", TypeSet::kReal, 1, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    return x.max(T(0));
  });
  RegisterUnary(r, "Relu6", TypeSet::kReal, 1, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    return x.max(T(0)).min(T(6));
  });
  // x < 0: exp(x) - 1, else x. exp(min(x, 0)) - 1 is exactly 0 for x >= 0.
  RegisterUnary(r, "Elu", TypeSet::kFloat, 20, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    return (x.min(T(0)).exp() - T(1)) + x.max(T(0));
  });
  RegisterUnary(r, "Tanh", TypeSet::kFloat, 20, [](const auto& x) { return x.tanh(); });
  RegisterUnary(r, "Sigmoid", TypeSet::kFloat, 20, [](const auto& x) { return x.logistic(); });
  RegisterLeakyRelu(r);
  RegisterGeluOps(r);

  RegisterBinary(r, "ReluGrad", TypeSet::kReal, "gradients", "features", false, 1,
                 [](const auto& g, const auto& f) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   // TF's formula (so a NaN/inf gradient at f <= 0 gives NaN, as in TF);
                   // Eigen 3.4's select() has no vector path, this multiply has.
                   return g * (f > T(0)).template cast<T>();
                 });
  RegisterBinary(r, "Relu6Grad", TypeSet::kReal, "gradients", "features", false, 1,
                 [](const auto& g, const auto& f) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   return g * ((f > T(0)).template cast<T>() * (f < T(6)).template cast<T>());
                 });
  // TF: outputs < 0 ? (outputs + 1) * gradients : gradients; min(y, 0) + 1 is 1 for y >= 0.
  RegisterBinary(r, "EluGrad", TypeSet::kFloat, "gradients", "outputs", false, 3,
                 [](const auto& g, const auto& y) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   return (y.min(T(0)) + T(1)) * g;
                 });
  RegisterBinary(r, "TanhGrad", TypeSet::kFloat, "y", "dy", false, 2,
                 [](const auto& y, const auto& dy) {
                   using T = typename std::decay_t<decltype(y)>::Scalar;
                   return dy * (T(1) - y.square());
                 });
  RegisterBinary(r, "SigmoidGrad", TypeSet::kFloat, "y", "dy", false, 2,
                 [](const auto& y, const auto& dy) {
                   using T = typename std::decay_t<decltype(y)>::Scalar;
                   return dy * y * (T(1) - y);
                 });
}

}  // namespace troupe
