// Binary arithmetic with numpy broadcasting: Add/AddV2, Sub, Mul, Div/RealDiv, DivNoNan,
// Maximum, Minimum, Pow, SquaredDifference.
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {

using kernels::RegisterBinary;
using kernels::TypeSet;

void RegisterElementwiseOps(OpRegistry& r) {
  auto add = [](const auto& x, const auto& y) { return x + y; };
  RegisterBinary(r, "Add", TypeSet::kReal, "x", "y", true, 1, add);
  RegisterBinary(r, "AddV2", TypeSet::kReal, "x", "y", true, 1, add);
  RegisterBinary(r, "Sub", TypeSet::kReal, "x", "y", true, 1,
                 [](const auto& x, const auto& y) { return x - y; });
  RegisterBinary(r, "Mul", TypeSet::kReal, "x", "y", true, 1,
                 [](const auto& x, const auto& y) { return x * y; });
  auto div = [](const auto& x, const auto& y) { return x / y; };
  RegisterBinary(r, "Div", TypeSet::kFloat, "x", "y", true, 4, div);
  RegisterBinary(r, "RealDiv", TypeSet::kFloat, "x", "y", true, 4, div);
  RegisterBinary(r, "DivNoNan", TypeSet::kFloat, "x", "y", true, 4,
                 [](const auto& x, const auto& y) {
                   using T = typename std::decay_t<decltype(x)>::Scalar;
                   return (y != T(0)).select(x / y, T(0));
                 });
  RegisterBinary(r, "Maximum", TypeSet::kReal, "x", "y", true, 1,
                 [](const auto& x, const auto& y) { return x.max(y); });
  RegisterBinary(r, "Minimum", TypeSet::kReal, "x", "y", true, 1,
                 [](const auto& x, const auto& y) { return x.min(y); });
  RegisterBinary(r, "Pow", TypeSet::kFloat, "x", "y", true, 20,
                 [](const auto& x, const auto& y) { return x.pow(y); });
  RegisterBinary(r, "SquaredDifference", TypeSet::kReal, "x", "y", true, 2,
                 [](const auto& x, const auto& y) { return (x - y).square(); });
}

}  // namespace troupe
