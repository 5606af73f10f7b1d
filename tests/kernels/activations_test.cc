// Erf, Elu, LeakyRelu, Relu6 and their gradient kernels against scalar formulas (TF's), edge
// values (0, the Relu6 clip points, large |x|), attributes and numerical derivatives.
#include <cmath>

#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT

const std::vector<double> kPoints = {-30, -4, -2.5, -1, -0.3, -1e-3, 0,  1e-3, 0.7,
                                     1,   3,  5.9,  6,  6.1,  30,    88, 100};

Tensor Points(DType dtype) {
  if (dtype == DType::kFloat64)
    return Make<double>(kPoints, {static_cast<int64_t>(kPoints.size())});
  std::vector<float> f(kPoints.begin(), kPoints.end());
  return Make<float>(f, {static_cast<int64_t>(f.size())});
}

double At(const Tensor& t, size_t i) {
  return t.dtype() == DType::kFloat64 ? t.data<double>()[i] : t.data<float>()[i];
}

// op(points) against ref elementwise, within tol relative to max(|ref|, 1): TF's Elu is
// exp(x) - 1, which cancels near 0 in float32.
void ExpectUnary(const std::string& op, const AttrMap& attrs,
                 const std::function<double(double)>& ref, double tol32) {
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    SCOPED_TRACE(op + " " + std::string(DTypeName(dt)));
    Tensor x = Points(dt);
    Tensor y = Run1(op, {x}, attrs);
    const double tol = dt == DType::kFloat32 ? tol32 : 1e-14;
    for (size_t i = 0; i < kPoints.size(); ++i) {
      const double want = ref(At(x, i));  // of the value as stored (float32-rounded)
      EXPECT_NEAR(At(y, i), want, tol * std::max(std::abs(want), 1.0)) << "x = " << kPoints[i];
    }
  }
}

TEST(ActivationsTest, ForwardMatchesFormulas) {
  ExpectUnary(
      "Erf", {}, [](double x) { return std::erf(x); }, 2e-7);
  ExpectUnary(
      "Elu", {}, [](double x) { return x < 0 ? std::expm1(x) : x; }, 2e-7);
  ExpectUnary(
      "Relu6", {}, [](double x) { return std::min(std::max(x, 0.0), 6.0); }, 0);
  // alpha is a float attribute in TF: float64 kernels use float(alpha) too.
  ExpectUnary(
      "LeakyRelu", {}, [](double x) { return x > 0 ? x : double(0.2f) * x; }, 1e-7);
  ExpectUnary(
      "LeakyRelu", {{"alpha", 0.01}}, [](double x) { return x > 0 ? x : double(0.01f) * x; }, 1e-7);
  // alpha > 1 is allowed (TF uses a select, not max(x, alpha * x)).
  ExpectUnary(
      "LeakyRelu", {{"alpha", 2.0}}, [](double x) { return x > 0 ? x : 2 * x; }, 1e-7);
  // Relu6 on integers.
  EXPECT_EQ(Values<int32_t>(Run1("Relu6", {Make<int32_t>({-3, 0, 4, 6, 9}, {5})})),
            (std::vector<int32_t>{0, 0, 4, 6, 6}));
}

TEST(ActivationsTest, GradientKernelsFollowTf) {
  Tensor x = Points(DType::kFloat64);
  const int64_t n = x.num_elements();
  Tensor g = Random<double>({n}, 5, 0.5, 2.0);
  // EluGrad(gradients, outputs): outputs < 0 ? (outputs + 1) * g : g.
  Tensor y = Run1("Elu", {x});
  Tensor d_elu = Run1("EluGrad", {g, y});
  // LeakyReluGrad / Relu6Grad take the features.
  Tensor d_leaky = Run1("LeakyReluGrad", {g, x}, {{"alpha", 0.3}});
  Tensor d_relu6 = Run1("Relu6Grad", {g, x});
  for (int64_t i = 0; i < n; ++i) {
    const double xi = kPoints[static_cast<size_t>(i)], gi = g.data<double>()[i];
    const double yi = y.data<double>()[i];
    EXPECT_EQ(d_elu.data<double>()[i], yi < 0 ? (yi + 1) * gi : gi) << xi;
    EXPECT_EQ(d_leaky.data<double>()[i], xi > 0 ? gi : gi * double(0.3f)) << xi;
    EXPECT_EQ(d_relu6.data<double>()[i], (xi > 0 && xi < 6) ? gi : 0.0) << xi;
  }
}

// The gradient kernels are derivatives of the forward ops (away from the kinks).
TEST(ActivationsTest, GradientsMatchNumerical) {
  Tensor x = Random<double>({40}, 3, -5, 8);
  Tensor w = Random<double>({40}, 4);
  auto run = [](const char* op, AttrMap a = {}) {
    return [op, a](const Tensor& t) { return Run1(op, {t}, a); };
  };
  CheckGradient(run("Elu"), x, w, Run1("EluGrad", {w, Run1("Elu", {x})}));
  CheckGradient(run("Relu6"), x, w, Run1("Relu6Grad", {w, x}));
  AttrMap alpha{{"alpha", 0.1}};
  CheckGradient(run("LeakyRelu", alpha), x, w, Run1("LeakyReluGrad", {w, x}, alpha));
}

TEST(ActivationsTest, Errors) {
  Tensor x = Random({3}, 1);
  EXPECT_INVALID(RunStatus("LeakyRelu", {x}, {{"alpha", int64_t{1}}}), "LeakyRelu", "'alpha'",
                 "float");
  EXPECT_INVALID(RunStatus("EluGrad", {x, Random({4}, 2)}), "EluGrad:", "'gradients'", "[3]",
                 "[4]");
  EXPECT_INVALID(RunStatus("Erf", {Make<int32_t>({1}, {1})}), "Erf:", "int32");
}

}  // namespace
}  // namespace troupe
