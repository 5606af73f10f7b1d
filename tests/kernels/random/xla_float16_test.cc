// Troupe's float16 rule for XLA's random ops (every op rounded) and the model of XLA on CPUs
// with AVX512-FP16 (a * b + c rounded once), each checked against the definition: the result is
// the float16 nearest the exact value (ties to even), the exact value held in a long double.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/tensor.h"
#include "kernels/random/random_ops.h"
#include "kernels/random/xla_cpu_math.h"

namespace troupe::random {
namespace {

using xla::XlaFloat16;

uint16_t Bits(half h) { return Eigen::numext::bit_cast<uint16_t>(h); }
half FromBits(uint16_t b) { return Eigen::numext::bit_cast<half>(b); }

// The float16 neighbours of r away from and towards zero (r finite, not the largest).
half Next(half r, int dir) {
  const uint16_t b = Bits(r);
  if ((b & 0x7fff) == 0) return FromBits(dir > 0 ? 0x0001 : 0x8001);
  const bool neg = b & 0x8000;
  return FromBits(static_cast<uint16_t>((dir > 0) != neg ? b + 1 : b - 1));
}

// True when r is the float16 nearest v, ties to the even significand.
bool IsNearest(long double v, half r) {
  const long double d = std::fabs(v - static_cast<long double>(static_cast<float>(r)));
  for (int dir : {-1, 1}) {
    const half n = Next(r, dir);
    const long double dn = std::fabs(v - static_cast<long double>(static_cast<float>(n)));
    if (dn < d || (dn == d && (Bits(r) & 1) != 0)) return false;
  }
  return true;
}

struct ModelGuard {
  explicit ModelGuard(XlaFloat16 m) { xla::SetXlaFloat16ModelForTesting(m); }
  ~ModelGuard() { xla::SetXlaFloat16ModelForTesting(XlaFloat16::kRoundEachOp); }
};

// Every finite float16 in [-4, 4), and the (m, a) pairs XLA's random ops multiply-add with:
// uniform's [-3, 5.5) range, normal's stddev 2.5 / mean 1.5, the truncated normal's z and
// alpha_cdf, plus a pair of tiny and large magnitudes.
std::vector<float> SmallHalves() {
  std::vector<float> xs;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float x = static_cast<float>(FromBits(static_cast<uint16_t>(b)));
    if (std::isfinite(x) && std::fabs(x) < 4.0f) xs.push_back(x);
  }
  return xs;
}

const float kPairs[][2] = {{8.5f, -3.0f},
                           {2.5f, 1.5f},
                           {static_cast<float>(half(0.9545f)), static_cast<float>(half(0.02275f))},
                           {0.0009765625f, 1000.0f},
                           {300.0f, -0.00048828125f}};

TEST(XlaFloat16Test, RoundEachOpRoundsTheProductThenTheSum) {
  ASSERT_EQ(xla::XlaFloat16Model(), XlaFloat16::kRoundEachOp);
  int64_t checked = 0;
  for (const auto& [m, a] : kPairs) {
    for (float x : SmallHalves()) {
      const half r = xla::XlaHalfMultiplyAdd(x, m, a);
      const half product = half(x * m);  // checked as a rounding of its own just below
      ASSERT_TRUE(IsNearest(static_cast<long double>(x) * m, product)) << x << " * " << m;
      const long double sum = static_cast<long double>(static_cast<float>(product)) + a;
      if (!std::isfinite(static_cast<float>(r))) continue;
      ASSERT_TRUE(IsNearest(sum, r)) << x << " * " << m << " + " << a << " -> " << r;
      ++checked;
    }
  }
  EXPECT_GT(checked, 150000);
}

TEST(XlaFloat16Test, FusedModelRoundsOnceAndDiffersFromTheRule) {
  int64_t differ = 0;
  for (const auto& [m, a] : kPairs) {
    for (float x : SmallHalves()) {
      const half rule = xla::XlaHalfMultiplyAdd(x, m, a);
      half fused;
      {
        ModelGuard guard(XlaFloat16::kFusedMultiplyAdd);
        fused = xla::XlaHalfMultiplyAdd(x, m, a);
      }
      if (!std::isfinite(static_cast<float>(fused))) continue;
      const long double exact = static_cast<long double>(x) * m + a;
      ASSERT_TRUE(IsNearest(exact, fused)) << x << " * " << m << " + " << a << " -> " << fused;
      differ += Bits(rule) != Bits(fused);
    }
  }
  // XLA on AVX512-FP16 CPUs and Troupe's rule really are two behaviours on these operands.
  EXPECT_GT(differ, 1000);
}

TEST(XlaFloat16Test, FusedModelRoundsOnceOnRandomOperands) {
  ModelGuard guard(XlaFloat16::kFusedMultiplyAdd);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mag(-12.0f, 12.0f);
  for (int i = 0; i < 200000; ++i) {
    float v[3];
    for (float& f : v)
      f = static_cast<float>(
          half(std::ldexp(1.0f + (rng() & 1023) / 1024.0f, static_cast<int>(mag(rng))) *
               ((rng() & 1) ? 1.0f : -1.0f)));
    const half r = xla::XlaHalfMultiplyAdd(v[0], v[1], v[2]);
    if (!std::isfinite(static_cast<float>(r))) continue;
    const long double exact = static_cast<long double>(v[0]) * v[1] + v[2];
    ASSERT_TRUE(IsNearest(exact, r)) << v[0] << " * " << v[1] << " + " << v[2] << " -> " << r;
  }
}

TEST(XlaFloat16Test, ScaleAndShiftFollowsTheRuleUnlessTheModelIsSelected) {
  std::vector<half> xs;
  for (uint32_t b = 0; b < 1024; ++b) xs.push_back(FromBits(static_cast<uint16_t>(b | 0x3800)));
  Tensor t = Tensor::FromVector<half>(xs);
  Result<Tensor> rule = ScaleAndShift(t, 8.5, -3.0, /*fused=*/true);
  Result<Tensor> eager = ScaleAndShift(t, 8.5, -3.0, /*fused=*/false);
  ASSERT_TRUE(rule.ok() && eager.ok());
  std::vector<half> fused;
  Result<Tensor> model = [&] {
    ModelGuard guard(XlaFloat16::kFusedMultiplyAdd);
    for (half x : xs) fused.push_back(xla::XlaHalfMultiplyAdd(static_cast<float>(x), 8.5f, -3.0f));
    return ScaleAndShift(t, 8.5, -3.0, /*fused=*/true);
  }();
  ASSERT_TRUE(model.ok());
  int differ = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = static_cast<float>(xs[i]);
    EXPECT_EQ(Bits(rule->data<half>()[i]), Bits(half(static_cast<float>(half(x * 8.5f)) - 3.0f)));
    EXPECT_EQ(Bits(eager->data<half>()[i]), Bits(rule->data<half>()[i]));
    EXPECT_EQ(Bits(model->data<half>()[i]), Bits(fused[i]));
    differ += Bits(model->data<half>()[i]) != Bits(rule->data<half>()[i]);
  }
  EXPECT_GT(differ, 0);
}

TEST(XlaFloat16Test, TruncatedNormalChangesOnlyThroughItsMultiplyAdd) {
  int differ = 0;
  for (uint32_t b = 0; b < 1024; ++b) {
    const half u = half(static_cast<float>(FromBits(static_cast<uint16_t>(b | 0x3c00))) - 1.0f);
    const half rule = xla::XlaTruncatedNormalF16(u);
    half model;
    {
      ModelGuard guard(XlaFloat16::kFusedMultiplyAdd);
      model = xla::XlaTruncatedNormalF16(u);
    }
    EXPECT_LE(std::fabs(static_cast<float>(rule)), 2.0f);
    differ += Bits(rule) != Bits(model);
  }
  EXPECT_GT(differ, 0);
}

TEST(XlaFloat16Test, NamesRoundTrip) {
  for (XlaFloat16 a : {XlaFloat16::kRoundEachOp, XlaFloat16::kFusedMultiplyAdd}) {
    XlaFloat16 back;
    ASSERT_TRUE(xla::XlaFloat16FromName(xla::XlaFloat16Name(a), &back));
    EXPECT_EQ(back, a);
  }
  XlaFloat16 unused;
  EXPECT_FALSE(xla::XlaFloat16FromName("native", &unused));
}

}  // namespace
}  // namespace troupe::random
