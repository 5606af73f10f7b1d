// kernels::Gemm (float: the packed GEMM's default path, kernels/gemm_packed_test.cc checks
// every path bit for bit; double: Eigen) against a double-precision loop, for every transpose
// combination, odd shapes and padded leading dimensions; plus the same bits for any row split
// (callers split rows across threads).
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/testutil/random_fill.h"

namespace troupe {
namespace {

struct Shape {
  int64_t m, n, k;
};

using testutil::UniformFloats;

void Check(bool ta, bool tb, Shape s) {
  const int64_t lda = (ta ? s.m : s.k) + 3, ldb = (tb ? s.k : s.n) + 1, ldc = s.n + 2;
  const auto a = UniformFloats((ta ? s.k : s.m) * lda, 1),
             b = UniformFloats((tb ? s.n : s.k) * ldb, 2);
  std::vector<float> c(static_cast<size_t>(s.m * ldc), -7.0f);
  kernels::Gemm<float>(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        want += double(a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)]) *
                double(b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)]);
      }
      ASSERT_NEAR(c[static_cast<size_t>(i * ldc + j)], want, 1e-5 * (1 + std::sqrt(double(s.k))))
          << "ta=" << ta << " tb=" << tb << " m=" << s.m << " n=" << s.n << " k=" << s.k << " at ("
          << i << "," << j << ")";
    }
    for (int64_t j = s.n; j < ldc; ++j) ASSERT_EQ(c[static_cast<size_t>(i * ldc + j)], -7.0f);
  }
}

const std::vector<Shape> kShapes = {{1, 1, 1},      {3, 5, 7},      {64, 120, 400}, {64, 10, 84},
                                    {150, 16, 436}, {436, 16, 150}, {436, 150, 16}, {97, 33, 300},
                                    {17, 64, 1000}, {200, 3, 2}};

TEST(GemmTest, MatchesLoop) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const Shape& s : kShapes) {
        Check(ta, tb, s);
      }
    }
  }
}

TEST(GemmTest, SameBitsForAnyRowSplit) {
  const int64_t m = 300, n = 40, k = 150;
  const auto a = UniformFloats(m * k, 3), b = UniformFloats(k * n, 4);
  std::vector<float> whole(static_cast<size_t>(m * n)), parts(whole.size());
  kernels::Gemm<float>(false, false, m, n, k, a.data(), k, b.data(), n, whole.data(), n);
  for (int64_t r = 0; r < m; r += 64) {
    const int64_t rows = std::min<int64_t>(64, m - r);
    kernels::Gemm<float>(false, false, rows, n, k, a.data() + r * k, k, b.data(), n,
                         parts.data() + r * n, n);
  }
  EXPECT_EQ(whole, parts);
}

}  // namespace
}  // namespace troupe
