// RoundToPrecision: bfloat16 round-to-nearest-even, float16 rounding with saturation to inf
// beyond 65504 and subnormals, NaN/inf/-0 kept, the vectorised path equal to the scalar one.
#include "kernels/round_precision.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype_traits.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using kernels::RoundToBFloat16;
using kernels::RoundToHalf;

uint32_t BitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

TEST(RoundToPrecisionTest, BFloat16RoundsToNearestEven) {
  const float ulp = std::ldexp(1.0f, -7);  // bfloat16 has 7 explicit mantissa bits
  EXPECT_EQ(RoundToBFloat16(1.0f), 1.0f);
  EXPECT_EQ(RoundToBFloat16(1.0f + ulp), 1.0f + ulp);
  // Ties go to the even neighbour: 1 + ulp/2 -> 1, 1 + 3 ulp/2 -> 1 + 2 ulp.
  EXPECT_EQ(RoundToBFloat16(1.0f + ulp / 2), 1.0f);
  EXPECT_EQ(RoundToBFloat16(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);
  EXPECT_EQ(RoundToBFloat16(-(1.0f + 3 * ulp / 2)), -(1.0f + 2 * ulp));
  // Just above a tie rounds up.
  EXPECT_EQ(RoundToBFloat16(1.0f + ulp / 2 + std::ldexp(1.0f, -20)), 1.0f + ulp);
  EXPECT_EQ(RoundToBFloat16(3.14159265f), 3.140625f);
  // Float32's range: a large value stays finite, values above bfloat16's largest finite round to
  // inf, infinities and NaN are kept, -0 stays -0.
  EXPECT_EQ(RoundToBFloat16(1e38f), 0x1.2cp+126f);
  EXPECT_TRUE(std::isinf(RoundToBFloat16(std::numeric_limits<float>::max())));
  EXPECT_EQ(RoundToBFloat16(-std::numeric_limits<float>::infinity()),
            -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(RoundToBFloat16(std::numeric_limits<float>::quiet_NaN())));
  // A signalling NaN with low payload bits only stays NaN (quietened, low 16 bits cleared).
  const float snan = std::numeric_limits<float>::signaling_NaN();
  EXPECT_TRUE(std::isnan(RoundToBFloat16(snan)));
  EXPECT_EQ(BitsOf(RoundToBFloat16(snan)) & 0xffffu, 0u);
  EXPECT_EQ(BitsOf(RoundToBFloat16(-0.0f)), 0x80000000u);
  // The result always has its low 16 bits clear and matches Eigen's bfloat16 conversion.
  for (float x : {0.1f, -2.7e-3f, 123456.7f, 1e-40f, 7.0e-39f}) {
    EXPECT_EQ(BitsOf(RoundToBFloat16(x)) & 0xffffu, 0u) << x;
    EXPECT_EQ(RoundToBFloat16(x), static_cast<float>(bfloat16(x))) << x;
  }
}

TEST(RoundToPrecisionTest, HalfRoundsAndSaturatesToInf) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(RoundToHalf(65504.0f), 65504.0f);  // largest finite float16
  EXPECT_EQ(RoundToHalf(65519.0f), 65504.0f);  // below the midpoint to 65536
  EXPECT_EQ(RoundToHalf(65520.0f), inf);       // the midpoint rounds (to even) to inf
  EXPECT_EQ(RoundToHalf(1e5f), inf);
  EXPECT_EQ(RoundToHalf(-1e5f), -inf);
  const float ulp = std::ldexp(1.0f, -10);
  EXPECT_EQ(RoundToHalf(1.0f + ulp / 2), 1.0f);
  EXPECT_EQ(RoundToHalf(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);
  // Subnormals down to 2^-24; half of that ties to 0 (even), 3/4 of it rounds up.
  EXPECT_EQ(RoundToHalf(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));
  EXPECT_EQ(RoundToHalf(std::ldexp(1.0f, -25)), 0.0f);
  EXPECT_EQ(RoundToHalf(std::ldexp(3.0f, -26)), std::ldexp(1.0f, -24));
  EXPECT_EQ(RoundToHalf(1e-9f), 0.0f);
  EXPECT_TRUE(std::isnan(RoundToHalf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(RoundToHalf(3.14159265f), 3.140625f);
}

TEST(RoundToPrecisionTest, OpRoundsEveryElementLikeTheScalarFunctions) {
  // 37 elements: the 8-wide path and the scalar tail.
  Tensor x = Random({37}, 7);
  std::vector<float> xs = Values<float>(x);
  xs[3] = 7e4f;
  xs[4] = -1e6f;
  xs[5] = std::numeric_limits<float>::quiet_NaN();
  xs[6] = -std::numeric_limits<float>::infinity();
  xs[7] = 1.0f + std::ldexp(1.0f, -8);  // a bfloat16 tie (to even: 1)
  xs[8] = std::numeric_limits<float>::max();
  x = Make<float>(xs, {37});
  for (DType t : {DType::kBFloat16, DType::kHalf}) {
    Tensor y = Run1("RoundToPrecision", {x}, {{"DstT", t}});
    ASSERT_EQ(y.dtype(), DType::kFloat32);
    std::vector<float> ys = Values<float>(y);
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = t == DType::kHalf ? RoundToHalf(xs[i]) : RoundToBFloat16(xs[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(ys[i])) << i;
      } else {
        EXPECT_EQ(BitsOf(ys[i]), BitsOf(want)) << i;
      }
    }
    // Equals Cast to the low type and back.
    Tensor low = Run1("Cast", {x}, {{"DstT", t}});
    std::vector<float> cast = Values<float>(Run1("Cast", {low}, {{"DstT", DType::kFloat32}}));
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!std::isnan(xs[i])) EXPECT_EQ(BitsOf(cast[i]), BitsOf(ys[i])) << i;
    }
  }
  EXPECT_TRUE(
      std::isinf(Values<float>(Run1("RoundToPrecision", {x}, {{"DstT", DType::kHalf}}))[3]));
}

TEST(RoundToPrecisionTest, Errors) {
  Tensor x = Random({2}, 1);
  EXPECT_INVALID(RunStatus("RoundToPrecision", {x}, {{"DstT", DType::kFloat32}}),
                 "RoundToPrecision", "bfloat16 or half");
  EXPECT_INVALID(RunStatus("RoundToPrecision", {Make<int32_t>({1}, {1})}, {{"DstT", DType::kHalf}}),
                 "RoundToPrecision", "float32");
}

}  // namespace
}  // namespace troupe
