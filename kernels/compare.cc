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
