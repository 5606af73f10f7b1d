// Activations Keras reaches through TF's own kernels (TF names, argument order and formulas,
// tensorflow/core/kernels/{softplus,softsign,relu}_op.h):
//   Softplus(features): x > -t ? x : x < t ? exp(x) : log1p(exp(x)), t = log(epsilon) + 2;
//   SoftplusGrad(gradients, features) = gradients / (exp(-features) + 1);
//   Softsign(features) = x / (|x| + 1);
//   SoftsignGrad(gradients, features) = gradients / (|features| + 1)^2;
//   Selu(features): x < 0 ? scale_alpha * (exp(x) - 1) : scale * x;
//   SeluGrad(gradients, outputs): y < 0 ? gradients * (y + scale_alpha) : gradients * scale.
// The selects are Eigen's coefficient-wise select (a select's untaken branch, e.g. exp(x) of a
// large x, never reaches the result). Elementwise: the same bits for any thread count.
#include <Eigen/Core>
#include <type_traits>

#include "kernels/elementwise_impl.h"
#include "kernels/register_ops.h"

namespace troupe {

using kernels::RegisterBinary;
using kernels::RegisterUnary;
using kernels::TypeSet;

namespace {

// SELU's constants, as TF's kernel spells them.
template <typename T>
constexpr T kSeluScale = static_cast<T>(1.0507009873554804934193349852946);
template <typename T>
constexpr T kSeluScaleAlpha = static_cast<T>(1.7580993408473768599402175208123);

template <typename T>
T SoftplusThreshold() {
  return Eigen::numext::log(Eigen::NumTraits<T>::epsilon()) + T(2);
}

}  // namespace

void RegisterActivationExtraOps(OpRegistry& r) {
  RegisterUnary(r, "Softplus", TypeSet::kFloat, 20, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_integral_v<T>) {
      return x;  // Dispatch instantiates integers; kFloat never runs them
    } else {
      const T t = SoftplusThreshold<T>();
      return (x > -t).select(x, (x < t).select(x.exp(), x.exp().log1p()));
    }
  });
  RegisterBinary(r, "SoftplusGrad", TypeSet::kFloat, "gradients", "features", false, 12,
                 [](const auto& g, const auto& f) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   if constexpr (std::is_integral_v<T>) {
                     return g;
                   } else {
                     return g / ((-f).exp() + T(1));
                   }
                 });
  RegisterUnary(r, "Softsign", TypeSet::kFloat, 4, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_integral_v<T>) {
      return x;  // Dispatch instantiates integers; kFloat never runs them
    } else {
      return x / (x.abs() + T(1));
    }
  });
  RegisterBinary(r, "SoftsignGrad", TypeSet::kFloat, "gradients", "features", false, 4,
                 [](const auto& g, const auto& f) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   if constexpr (std::is_integral_v<T>) {
                     return g;
                   } else {
                     return g / (f.abs() + T(1)).square();
                   }
                 });
  RegisterUnary(r, "Selu", TypeSet::kFloat, 20, [](const auto& x) {
    using T = typename std::decay_t<decltype(x)>::Scalar;
    if constexpr (std::is_integral_v<T>) {
      return x;  // Dispatch instantiates integers; kFloat never runs them
    } else {
      return (x < T(0)).select(kSeluScaleAlpha<T> * (x.exp() - T(1)), kSeluScale<T> * x);
    }
  });
  RegisterBinary(r, "SeluGrad", TypeSet::kFloat, "gradients", "outputs", false, 3,
                 [](const auto& g, const auto& y) {
                   using T = typename std::decay_t<decltype(g)>::Scalar;
                   if constexpr (std::is_integral_v<T>) {
                     return g;
                   } else {
                     return (y < T(0)).select(g * (y + kSeluScaleAlpha<T>), g * kSeluScale<T>);
                   }
                 });
}

}  // namespace troupe
