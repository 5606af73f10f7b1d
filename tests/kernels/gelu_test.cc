// FusedGelu / FusedGeluGrad (kernels/gelu.cc): values against a float64 reference of
// tf.nn.gelu(approximate=False) and its derivative, the same bits on the AVX2 lanes and the
// scalar tail (an element keeps its bits when shifted into another position), and the same
// bits for any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "kernels/op_registry.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using testing_util::Make;
using testing_util::Random;
using testing_util::Run1;
using testing_util::RunOn;
using testing_util::SameBits;
using testing_util::Values;

double GeluRef(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double GeluGradRef(double x) {
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * pdf;
}

TEST(FusedGeluTest, MatchesFloat64Reference) {
  const Tensor x = Random(TensorShape({4099}), 7, -7.0, 7.0);
  const Tensor dy = Random(TensorShape({4099}), 8);
  const Tensor y = Run1("FusedGelu", {x});
  const Tensor dx = Run1("FusedGeluGrad", {dy, x});
  const std::vector<float> xv = Values<float>(x), dyv = Values<float>(dy);
  const std::vector<float> yv = Values<float>(y), dxv = Values<float>(dx);
  for (size_t i = 0; i < xv.size(); ++i) {
    const double ry = GeluRef(xv[i]), rdx = dyv[i] * GeluGradRef(xv[i]);
    // 1 - erf(z) (the unfused graph's form; TF has erfc) loses up to ~1e-6 absolute for x < -4.
    EXPECT_NEAR(yv[i], ry, 1e-5 * std::abs(ry) + 1.5e-6) << xv[i];
    EXPECT_NEAR(dxv[i], rdx, 1e-5 * std::abs(rdx) + 5e-7) << xv[i];
  }
}

TEST(FusedGeluTest, EdgeValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x =
      Make<float>({0.0f, -0.0f, 40.0f, -40.0f, inf, -inf, nan, 1e-30f, 3.0f}, TensorShape({9}));
  const std::vector<float> y = Values<float>(Run1("FusedGelu", {x}));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[2], 40.0f, 1e-5);
  EXPECT_NEAR(y[3], 0.0f, 1e-5);
  EXPECT_EQ(y[4], inf);
  EXPECT_TRUE(std::isnan(y[6]));
  const Tensor ones = Make<float>(std::vector<float>(9, 1.0f), TensorShape({9}));
  const std::vector<float> dx = Values<float>(Run1("FusedGeluGrad", {ones, x}));
  EXPECT_EQ(dx[0], 0.5f);
  EXPECT_NEAR(dx[2], 1.0f, 1e-6);
  EXPECT_NEAR(dx[3], 0.0f, 1e-6);
  EXPECT_TRUE(std::isnan(dx[6]));
  EXPECT_NEAR(dx[8], GeluGradRef(3.0), 1e-6);
}

// Offsets 0..8 move every element between the 8-lane body and the scalar tail.
TEST(FusedGeluTest, SameBitsInAnyLaneAndTail) {
  const int64_t n = 203;
  const std::vector<float> xv = Values<float>(Random(TensorShape({n + 8}), 11, -6.0, 6.0));
  const std::vector<float> gv = Values<float>(Random(TensorShape({n + 8}), 12));
  const auto slice = [](const std::vector<float>& v, int64_t off, int64_t len) {
    return Make<float>(std::vector<float>(v.begin() + off, v.begin() + off + len),
                       TensorShape({len}));
  };
  const std::vector<float> y0 = Values<float>(Run1("FusedGelu", {slice(xv, 0, n + 8)}));
  const std::vector<float> d0 =
      Values<float>(Run1("FusedGeluGrad", {slice(gv, 0, n + 8), slice(xv, 0, n + 8)}));
  for (int64_t off = 1; off <= 8; ++off) {
    for (int64_t len : {n, int64_t{5}}) {
      const std::vector<float> y = Values<float>(Run1("FusedGelu", {slice(xv, off, len)}));
      const std::vector<float> d =
          Values<float>(Run1("FusedGeluGrad", {slice(gv, off, len), slice(xv, off, len)}));
      for (int64_t i = 0; i < len; ++i) {
        const size_t j = static_cast<size_t>(off + i);
        EXPECT_EQ(std::memcmp(&y[static_cast<size_t>(i)], &y0[j], 4), 0) << off << " " << i;
        EXPECT_EQ(std::memcmp(&d[static_cast<size_t>(i)], &d0[j], 4), 0) << off << " " << i;
      }
    }
  }
}

TEST(FusedGeluTest, SameBitsForAnyThreadCount) {
  const Tensor x = Random(TensorShape({12, 64, 512}), 21, -5.0, 5.0);
  const Tensor dy = Random(TensorShape({12, 64, 512}), 22);
  const Tensor y0 = (*RunOn(nullptr, "FusedGelu", {x}))[0];
  const Tensor d0 = (*RunOn(nullptr, "FusedGeluGrad", {dy, x}))[0];
  for (int n = 1; n <= 3; ++n) {
    ThreadPool pool(n, "gelu");
    EXPECT_TRUE(SameBits((*RunOn(&pool, "FusedGelu", {x}))[0], y0)) << n;
    EXPECT_TRUE(SameBits((*RunOn(&pool, "FusedGeluGrad", {dy, x}))[0], d0)) << n;
  }
}

TEST(FusedGeluTest, RejectsOtherDTypesAndShapes) {
  const Tensor xd = Random<double>(TensorShape({4}), 1);
  EXPECT_FALSE(testing_util::RunStatus("FusedGelu", {xd}).ok());
  EXPECT_FALSE(testing_util::RunStatus("FusedGeluGrad",
                                       {Random(TensorShape({4}), 1), Random(TensorShape({5}), 2)})
                   .ok());
}

}  // namespace
}  // namespace troupe
