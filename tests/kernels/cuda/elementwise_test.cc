// GPU elementwise kernels (binary with broadcasting, comparisons, unary, activations and their
// gradients) against the CPU kernels: bit-equal where the operation is exact, 1e-5 otherwise.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using gpu_testing::RunOnBoth;
using testing_util::Make;
using testing_util::Random;
using testing_util::RandomInts;  // small integers: many ties and equal pairs

// Runs `op` on both devices; exact: bit-equal outputs, else AllClose at `rel`.
void ExpectMatch(const std::string& op, const std::vector<Tensor>& in, const AttrMap& attrs,
                 bool exact, double rel = 1e-5) {
  if (exact) {
    gpu_testing::ExpectBitEqual(op, in, attrs);
  } else {
    gpu_testing::ExpectClose(op, in, attrs, rel);
  }
}

TEST(GpuElementwise, LeNetBiasAddAndScalarDivide) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor act = Random({64, 28, 28, 6}, 1, -2, 2);
  ExpectMatch("AddV2", {act, Random({6}, 2)}, {}, true);
  ExpectMatch("AddV2", {Random({64, 120}, 3), Random({120}, 4)}, {}, true);
  ExpectMatch("Mul", {act, Random({6}, 5)}, {}, true);
  // Metrics: sum / count with a scalar count, and a zero count.
  ExpectMatch("DivNoNan", {Random({}, 6), Make<float>({64}, {})}, {}, true);
  ExpectMatch("DivNoNan", {Random({10}, 7), Make<float>({0}, {})}, {}, true);
  ExpectMatch("Mul", {Random({64, 10}, 8), Make<float>({0.5f}, {})}, {}, true);
}

TEST(GpuElementwise, BroadcastCornerCases) {
  TROUPE_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<TensorShape, TensorShape>> cases = {
      {{3, 1, 5}, {1, 4, 1}},
      {{}, {7, 3}},
      {{7, 3}, {}},
      {{2, 0, 3}, {3}},
      {{5}, {5}},
      {{4, 1}, {1, 6}},
      {{2, 3, 4, 5}, {3, 1, 5}},
      {{1}, {1}},
      {{2, 1, 3, 1, 4, 1, 5}, {1, 6, 1, 2, 1, 3, 1}},
      {{0}, {}},
      {{1, 7}, {7, 1}},
      {{9, 1, 1}, {1, 1, 11}}};
  uint32_t seed = 10;
  for (const auto& [sa, sb] : cases) {
    for (const char* op : {"Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference",
                           "RealDiv", "Div", "DivNoNan"}) {
      ExpectMatch(op, {Random(sa, seed), Random(sb, seed + 1, 0.5, 2)}, {}, true);
      ++seed;
    }
    for (const char* op : {"AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference"}) {
      ExpectMatch(op, {RandomInts<int32_t>(sa, seed), RandomInts<int32_t>(sb, seed + 1)}, {}, true);
      ExpectMatch(op, {RandomInts<int64_t>(sa, seed), RandomInts<int64_t>(sb, seed + 1)}, {}, true);
      ExpectMatch(op, {Random<double>(sa, seed), Random<double>(sb, seed + 1)}, {}, true);
      ++seed;
    }
  }
}

TEST(GpuElementwise, DivisionByZero) {
  TROUPE_SKIP_WITHOUT_GPU();
  // Nonzero / 0 is inf on both; 0/0 is left out (x86 and CUDA spell the NaN differently).
  Tensor x = Make<float>({1, -2, 3, 0.5f, -0.25f, 7}, {6});
  Tensor y = Make<float>({0, 0, 2, -0.0f, 4, 0}, {6});
  ExpectMatch("DivNoNan", {x, y}, {}, true);
  ExpectMatch("RealDiv", {x, y}, {}, true);
  ExpectMatch("DivNoNan", {Make<float>({0, 0, 1}, {3}), Make<float>({0, 0, 0}, {3})}, {}, true);
}

TEST(GpuElementwise, Comparisons) {
  TROUPE_SKIP_WITHOUT_GPU();
  // LeNet's accuracy: Equal(argmax int64, labels int64).
  ExpectMatch("Equal", {RandomInts<int64_t>({64}, 20, 0, 9), RandomInts<int64_t>({64}, 21, 0, 9)},
              {}, true);
  uint32_t seed = 30;
  for (const char* op : {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"}) {
    ExpectMatch(op, {RandomInts<float>({3, 1, 5}, seed), RandomInts<float>({1, 4, 1}, seed + 1)},
                {}, true);
    ExpectMatch(op, {RandomInts<int32_t>({6, 7}, seed), RandomInts<int32_t>({7}, seed + 1)}, {},
                true);
    ExpectMatch(op, {RandomInts<double>({}, seed), RandomInts<double>({10}, seed + 1)}, {}, true);
    ExpectMatch(op, {RandomInts<int64_t>({0, 3}, seed), RandomInts<int64_t>({3}, seed + 1)}, {},
                true);
    seed += 2;
  }
}

TEST(GpuElementwise, UnaryExact) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor x = Random({1001}, 40, -3, 3);
  for (const char* op : {"Neg", "Abs", "Sign", "Square", "Relu"}) {
    ExpectMatch(op, {x}, {}, true);
    ExpectMatch(op, {Random<double>({17, 3}, 41, -3, 3)}, {}, true);
    ExpectMatch(op, {RandomInts<int32_t>({100}, 42)}, {}, true);
    ExpectMatch(op, {RandomInts<int64_t>({100}, 43)}, {}, true);
    ExpectMatch(op, {Random({0, 4}, 44)}, {}, true);
  }
  // Relu of the LeNet conv output; zeros and signed zeros pass through as on the CPU.
  ExpectMatch("Relu", {Random({64, 28, 28, 6}, 45, -1, 1)}, {}, true);
  ExpectMatch("Relu", {Make<float>({0.0f, -0.0f, -1, 2}, {4})}, {}, true);
  ExpectMatch("Sign", {Make<float>({0.0f, -0.0f, -1, 2}, {4})}, {}, true);
  Tensor pos = Random({999}, 46, 0.01, 50);
  ExpectMatch("Reciprocal", {pos}, {}, true);
  ExpectMatch("Sqrt", {Random<double>({999}, 47, 0.01, 50)}, {}, true);
  // float32: Eigen's fast-math psqrt (rsqrt + a Newton step) is 1-2 bits off the IEEE sqrt.
  ExpectMatch("Sqrt", {pos}, {}, false);
}

TEST(GpuElementwise, UnaryTranscendental) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor x = Random({4099}, 50, -12, 12);  // covers Sigmoid's x < -9 branch
  Tensor pos = Random({4099}, 51, 0.001, 100);
  for (const char* op : {"Exp", "Tanh", "Sigmoid"}) {
    ExpectMatch(op, {x}, {}, false);
    ExpectMatch(op, {Random<double>({300}, 52, -12, 12)}, {}, false);
  }
  for (const char* op : {"Log", "Rsqrt"}) {
    ExpectMatch(op, {pos}, {}, false);
    ExpectMatch(op, {Random<double>({300}, 53, 0.001, 100)}, {}, false);
  }
  ExpectMatch("Pow", {Random({64, 10}, 54, 0.1, 3), Random({10}, 55, -2, 2)}, {}, false);
}

TEST(GpuElementwise, GradientOps) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor g = Random({64, 28, 28, 6}, 60);
  Tensor f = Random({64, 28, 28, 6}, 61);
  ExpectMatch("ReluGrad", {g, f}, {}, true);
  ExpectMatch("ReluGrad", {RandomInts<int32_t>({50}, 62), RandomInts<int32_t>({50}, 63)}, {}, true);
  Tensor y = Random({513}, 64, -0.99, 0.99);
  Tensor dy = Random({513}, 65);
  ExpectMatch("TanhGrad", {y, dy}, {}, false);
  ExpectMatch("SigmoidGrad", {Random({513}, 66, 0.01, 0.99), dy}, {}, false);
  Tensor ypos = Random({513}, 67, 0.1, 4);
  for (const char* op : {"SqrtGrad", "RsqrtGrad", "ReciprocalGrad"}) {
    ExpectMatch(op, {ypos, dy}, {}, false);
  }
}

TEST(GpuElementwise, ModernActivations) {
  TROUPE_SKIP_WITHOUT_GPU();
  // Exact blends: bit-equal, signed zeros and the Relu6 clip points included.
  Tensor edges = Make<float>({-0.0f, 0.0f, -1, 6, 6.5f, 5.99f, -7, 3}, {8});
  Tensor x = Random({4099}, 100, -8, 9);
  Tensor g = Random({4099}, 101);
  for (const Tensor& t : {edges, x}) {
    ExpectMatch("Relu6", {t}, {}, true);
    ExpectMatch("LeakyRelu", {t}, {}, true);
    ExpectMatch("LeakyRelu", {t}, {{"alpha", 0.01}}, true);
  }
  ExpectMatch("Relu6", {RandomInts<int32_t>({100}, 102, -3, 9)}, {}, true);
  ExpectMatch("LeakyRelu", {Random<double>({300}, 103, -5, 5)}, {{"alpha", 0.3}}, true);
  ExpectMatch("Relu6Grad", {g, x}, {}, true);
  ExpectMatch("LeakyReluGrad", {g, x}, {{"alpha", 0.3}}, true);
  ExpectMatch("LeakyReluGrad", {Random<double>({300}, 104), Random<double>({300}, 105, -5, 5)}, {},
              true);
  // EluGrad reads Elu's outputs (in (-1, 0) or positive).
  ExpectMatch("EluGrad", {g, Random({4099}, 106, -0.99, 3)}, {}, true);
  // exp and erf are approximations on both devices; Elu's exp(x) - 1 cancels near 0, so those
  // inputs stay away from it.
  Tensor away = Random({4099}, 107, 0.05, 6);
  ExpectMatch("Elu", {away}, {}, false);
  ExpectMatch("Elu", {Random({4099}, 108, -12, -0.05)}, {}, false);
  ExpectMatch("Elu", {Random<double>({300}, 109, -6, 6)}, {}, false);
  ExpectMatch("Erf", {x}, {}, false);
  ExpectMatch("Erf", {Random<double>({300}, 110, -6, 6)}, {}, false);
}

TEST(GpuElementwise, BigTensorsManyBlocks) {
  TROUPE_SKIP_WITHOUT_GPU();
  const int64_t n = 10'000'003;  // odd: the 16-byte path leaves a tail
  Tensor a = Random({n}, 70, -10, 10);
  Tensor b = Random({n}, 71, -10, 10);
  ExpectMatch("AddV2", {a, b}, {}, true);
  ExpectMatch("Mul", {a, b}, {}, true);
  ExpectMatch("Greater", {a, b}, {}, true);
  ExpectMatch("Relu", {a}, {}, true);
  ExpectMatch("AddV2", {Random({10000, 1000}, 72), Random({1000}, 73)}, {}, true);
  ExpectMatch("Mul", {Random({1000, 1, 10000}, 74), Random({1, 3, 1}, 75)}, {}, true);
}

TEST(GpuElementwise, DeterministicAndOnDevice) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto r1 = RunOnBoth("Sigmoid", {Random({100000}, 80, -12, 12)});
  auto r2 = RunOnBoth("Sigmoid", {Random({100000}, 80, -12, 12)});
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_TRUE((*r1).gpu[0].BitEqual((*r2).gpu[0]));
}

TEST(GpuElementwise, ErrorsNameTheOp) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto a = gpu::CopyTo(Random({2, 3}, 90), Device::Gpu(0));
  auto b = gpu::CopyTo(Random({4}, 91), Device::Gpu(0));
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = RunOp("AddV2", std::vector<Tensor>{*a, *b}, {}, Device::Gpu(0));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("AddV2"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace troupe
