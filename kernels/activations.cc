// Activations and their gradient kernels (TF names and argument order):
// Relu, Tanh, Sigmoid; ReluGrad(gradients, features), TanhGrad(y, dy), SigmoidGrad(y, dy).
#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {

using kernels::RegisterBinary;
using kernels::RegisterUnary;
using kernels::TypeSet;

void RegisterActivationOps(OpRegistry& r) {
  RegisterUnary(r, "Relu", TypeSet::kReal, 1, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    return x.max(T(0));
  });
  RegisterUnary(r, "Tanh", TypeSet::kFloat, 20, [](const auto& x) { return x.tanh(); });
  RegisterUnary(r, "Sigmoid", TypeSet::kFloat, 20, [](const auto& x) { return x.logistic(); });

  RegisterBinary(r, "ReluGrad", TypeSet::kReal, "gradients", "features", false, 1,
                 [](const auto& g, const auto& f) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   // TF's formula (so a NaN/inf gradient at f <= 0 gives NaN, as in TF);
                   // Eigen 3.4's select() has no vector path, this multiply has.
                   return g * (f > T(0)).template cast<T>();
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
