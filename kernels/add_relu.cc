// AddRelu(x, y) = Relu(x + y) for equal shapes (f32, f64): the residual join of ResNet blocks in
// one pass. Each element is rounded once by the add and then rectified as the Relu op does
// (Eigen's max(v, 0)), so the result has the bits of AddV2 followed by Relu, without the
// intermediate sum. Its gradient is ReluGrad(dy, output) for both inputs (graph/nn_grad.cc).
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {

void RegisterAddReluOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  RegisterBinary(r, "AddRelu", TypeSet::kFloat, "x", "y", /*broadcast=*/false, 2,
                 [](const auto& a, const auto& b) {
                   using T = typename std::decay_t<decltype(a)>::Scalar;
                   return (a + b).max(T(0));
                 });
}

}  // namespace troupe
