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

// The vectorised float/double sum and mean against a plain left-to-right loop: every source and
// destination count, lengths around the vector width and the 8 KiB block, in place on the first
// or the last source, NaN and infinities carried through.
template <typename T>
void CheckSumsMatchScalar() {
  for (int num_srcs = 2; num_srcs <= 5; ++num_srcs) {
    for (int num_dsts = 1; num_dsts <= 3; ++num_dsts) {
      for (int64_t n : {1, 7, 9, 2048, 2051, 5003}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          for (int in_place : {-1, 0, num_srcs - 1}) {
            std::vector<std::vector<T>> src(num_srcs, std::vector<T>(n));
            for (int s = 0; s < num_srcs; ++s) {
              for (int64_t i = 0; i < n; ++i) {
                src[s][i] = static_cast<T>(std::sin(1.7 * i + s) * std::pow(10.0, (i * 7 + s) % 9));
              }
            }
            src[0][n / 2] = std::numeric_limits<T>::infinity();
            src[num_srcs - 1][n - 1] = std::numeric_limits<T>::quiet_NaN();
            std::vector<T> want(n);
            for (int64_t i = 0; i < n; ++i) {
              T acc = src[0][i];
              for (int s = 1; s < num_srcs; ++s) acc = acc + src[s][i];
              want[i] = op == ReduceOp::kMean ? acc / static_cast<T>(num_srcs) : acc;
            }
            std::vector<std::vector<T>> out(num_dsts, std::vector<T>(n));
            std::vector<const void*> srcs;
            std::vector<void*> dsts;
            for (auto& v : src) srcs.push_back(v.data());
            for (auto& v : out) dsts.push_back(v.data());
            if (in_place >= 0) dsts[0] = src[in_place].data();
            FoldElements(DTypeOf<T>::value, op, srcs.data(), num_srcs, dsts.data(), num_dsts, n,
                         num_srcs);
            for (int d = 0; d < num_dsts; ++d) {
              const T* got = static_cast<const T*>(dsts[d]);
              ASSERT_EQ(std::memcmp(got, want.data(), n * sizeof(T)), 0)
                  << "srcs " << num_srcs << " dsts " << num_dsts << " n " << n << " op "
                  << ReduceOpName(op) << " in place " << in_place << " dst " << d;
            }
          }
        }
      }
    }
  }
}

TEST(FoldElements, VectorisedFloatAndDoubleSumsMatchScalar) {
  CheckSumsMatchScalar<float>();
  CheckSumsMatchScalar<double>();
}

}  // namespace
}  // namespace troupe
