#include "collectives/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype_traits.h"

namespace troupe {
namespace {

TEST(FoldElements, LeftToRightWithRoundingEachStep) {
  // (1e8 + 1) - 1e8 = 0 in float32, while (1e8 - 1e8) + 1 = 1: the fold order is visible.
  float a[1] = {1e8f}, b[1] = {1.f}, c[1] = {-1e8f}, out[1];
  const void* srcs[] = {a, b, c};
  void* dsts[] = {out};
  FoldElements(DType::kFloat32, ReduceOp::kSum, srcs, 3, dsts, 1, 1, 0);
  EXPECT_EQ(out[0], 0.f);
  const void* srcs2[] = {a, c, b};
  FoldElements(DType::kFloat32, ReduceOp::kSum, srcs2, 3, dsts, 1, 1, 0);
  EXPECT_EQ(out[0], 1.f);
}

TEST(FoldElements, HalfRoundsAfterEveryAdd) {
  half a[1] = {half(2048.f)}, b[1] = {half(1.f)}, out[1];
  const void* srcs[] = {a, b, b};
  void* dsts[] = {out};
  FoldElements(DType::kHalf, ReduceOp::kSum, srcs, 3, dsts, 1, 1, 0);
  EXPECT_EQ(static_cast<float>(out[0]), 2048.f);  // 2049 is not a half; each +1 is lost
}

TEST(FoldElements, MaxMinPropagateNaNAndIntsWrap) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float a[2] = {1.f, nan}, b[2] = {nan, 2.f}, out[2];
  const void* srcs[] = {a, b};
  void* dsts[] = {out};
  FoldElements(DType::kFloat32, ReduceOp::kMax, srcs, 2, dsts, 1, 2, 0);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  int32_t x[1] = {std::numeric_limits<int32_t>::max()}, y[1] = {1}, z[1];
  const void* isrcs[] = {x, y};
  void* idsts[] = {z};
  FoldElements(DType::kInt32, ReduceOp::kSum, isrcs, 2, idsts, 1, 1, 0);
  EXPECT_EQ(z[0], std::numeric_limits<int32_t>::min());
}

// The vectorised 16-bit sums must match Eigen's scalar arithmetic bit for bit, NaN, inf,
// subnormals, overflow and the tails included.
template <typename T>
void CheckSixteenBitSumsMatchScalar() {
  std::vector<T> a, b;
  std::vector<float> specials = {0.f,
                                 -0.f,
                                 1.f,
                                 -1.f,
                                 65504.f,
                                 65520.f,
                                 3e38f,
                                 -3e38f,
                                 1e-7f,
                                 6e-8f,
                                 1e-40f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::quiet_NaN(),
                                 0.1f,
                                 1.00390625f};
  uint32_t x = 12345;
  for (int i = 0; i < 1003; ++i) {
    x = x * 1664525u + 1013904223u;
    const float fa = i < 256 ? specials[i % specials.size()]
                             : std::ldexp(x / 4294967296.0f - 0.5f, static_cast<int>(x % 40) - 20);
    x = x * 1664525u + 1013904223u;
    const float fb = i < 256 ? specials[(i / specials.size()) % specials.size()]
                             : std::ldexp(x / 4294967296.0f - 0.5f, static_cast<int>(x % 40) - 20);
    a.push_back(T(fa));
    b.push_back(T(fb));
  }
  std::vector<T> out(a.size());
  const void* srcs[] = {a.data(), b.data()};
  void* dsts[] = {out.data()};
  FoldElements(DTypeOf<T>::value, ReduceOp::kSum, srcs, 2, dsts, 1, static_cast<int64_t>(a.size()),
               0);
  for (size_t i = 0; i < a.size(); ++i) {
    const T want = T(static_cast<float>(a[i]) + static_cast<float>(b[i]));
    uint16_t got_bits, want_bits;
    std::memcpy(&got_bits, &out[i], 2);
    std::memcpy(&want_bits, &want, 2);
    ASSERT_EQ(got_bits, want_bits)
        << "element " << i << ": " << static_cast<float>(a[i]) << " + " << static_cast<float>(b[i]);
  }
}

TEST(FoldElements, VectorisedHalfAndBFloat16SumsMatchScalar) {
  CheckSixteenBitSumsMatchScalar<half>();
  CheckSixteenBitSumsMatchScalar<bfloat16>();
}

TEST(FoldElements, DoubleMaxComparesAtFullPrecision) {
  double a[1] = {1.0}, b[1] = {1.0 + 1e-12}, out[1];
  const void* srcs[] = {a, b};
  void* dsts[] = {out};
  FoldElements(DType::kFloat64, ReduceOp::kMax, srcs, 2, dsts, 1, 1, 0);
  EXPECT_EQ(out[0], 1.0 + 1e-12);
  FoldElements(DType::kFloat64, ReduceOp::kMin, srcs, 2, dsts, 1, 1, 0);
  EXPECT_EQ(out[0], 1.0);
}

TEST(FoldElements, MeanDividesAndInPlaceAliasingWorks) {
  std::vector<int64_t> a(10000, 7), b(10000, 2);
  const void* srcs[] = {a.data(), b.data()};
  void* dsts[] = {a.data(), b.data()};
  FoldElements(DType::kInt64, ReduceOp::kMean, srcs, 2, dsts, 2, 10000, 2);
  EXPECT_EQ(a[9999], 4);
  EXPECT_EQ(b[0], 4);
  EXPECT_FALSE(IsCollectiveDType(DType::kString));
  EXPECT_NE(CheckCollectiveDType(DType::kBool, "allreduce").message().find("bool"),
            std::string::npos);
}

}  // namespace
}  // namespace troupe
