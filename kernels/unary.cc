// Unary math: Neg, Abs, Sign, Square, Sqrt, Rsqrt, Reciprocal, Exp, Log, Log1p, Erf, and the
// gradient helpers TF has for them: SqrtGrad, RsqrtGrad, ReciprocalGrad (all (y, dy) -> dx).
#include <type_traits>

#include <unsupported/Eigen/SpecialFunctions>

#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {

using kernels::RegisterBinary;
using kernels::RegisterUnary;
using kernels::TypeSet;

void RegisterUnaryOps(OpRegistry& r) {
  RegisterUnary(r, "Neg", TypeSet::kReal, 1, [](const auto& x) { return -x; });
  RegisterUnary(r, "Abs", TypeSet::kReal, 1, [](const auto& x) { return x.abs(); });
  RegisterUnary(r, "Sign", TypeSet::kReal, 1, [](const auto& x) { return x.sign(); });
  RegisterUnary(r, "Square", TypeSet::kReal, 1, [](const auto& x) { return x.square(); });
  RegisterUnary(r, "Sqrt", TypeSet::kFloat, 4, [](const auto& x) { return x.sqrt(); });
  RegisterUnary(r, "Rsqrt", TypeSet::kFloat, 4, [](const auto& x) { return x.rsqrt(); });
  RegisterUnary(r, "Reciprocal", TypeSet::kFloat, 4, [](const auto& x) { return x.inverse(); });
  RegisterUnary(r, "Exp", TypeSet::kFloat, 10, [](const auto& x) { return x.exp(); });
  RegisterUnary(r, "Log", TypeSet::kFloat, 10, [](const auto& x) { return x.log(); });
  // Eigen's log1p, as TF's Log1p kernel (sigmoid cross-entropy's log(1 + exp(-|x|))).
  RegisterUnary(r, "Log1p", TypeSet::kFloat, 10, [](const auto& x) {
    // Dispatch instantiates integer types too, which Eigen's log1p refuses; kFloat never runs them.
    using T = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_integral_v<T>) {
      return x;
    } else {
      return x.log1p();
    }
  });
  // Eigen's erf, as TF's Erf kernel (float: a vectorised rational approximation).
  RegisterUnary(r, "Erf", TypeSet::kFloat, 20, [](const auto& x) { return x.erf(); });

  // (y, dy): y is the forward op's output.
  RegisterBinary(r, "SqrtGrad", TypeSet::kFloat, "y", "dy", false, 4,
                 [](const auto& y, const auto& dy) {
                   using T = typename std::decay_t<decltype(y)>::Scalar;
                   return dy * T(0.5) / y;
                 });
  RegisterBinary(r, "RsqrtGrad", TypeSet::kFloat, "y", "dy", false, 4,
                 [](const auto& y, const auto& dy) {
                   using T = typename std::decay_t<decltype(y)>::Scalar;
                   return dy * T(-0.5) * y.cube();
                 });
  RegisterBinary(r, "ReciprocalGrad", TypeSet::kFloat, "y", "dy", false, 2,
                 [](const auto& y, const auto& dy) { return -dy * y.square(); });
}

}  // namespace troupe
