// kernels/im2col.h: Im2ColColumns writes exactly the chosen columns of Im2Col's patch rows,
// at its own row stride, whatever columns it starts and ends in (mid-tap, mid-window-row), with
// padding, strides and dilations.
#include "kernels/im2col.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernels/conv2d_direct.h"
#include "tests/testutil/random_fill.h"

namespace troupe {
namespace {

using kernels::ConvGeo;

TEST(Im2ColColumnsTest, WritesTheChosenColumnsOfIm2Col) {
  // n, h, w, c, kh, kw, f, oh, ow, sh, sw, pt, pl, dh, dw
  for (const ConvGeo& g : {ConvGeo{2, 7, 6, 5, 3, 3, 1, 7, 6, 1, 1, 1, 1},
                           ConvGeo{1, 9, 8, 4, 3, 2, 1, 5, 4, 2, 2, 1, 0},
                           ConvGeo{2, 8, 8, 3, 3, 3, 1, 4, 4, 1, 1, 0, 0, 2, 2},
                           ConvGeo{1, 6, 6, 16, 1, 1, 1, 3, 3, 2, 2, 0, 0}}) {
    const int64_t K = g.K(), rows = g.rows();
    const auto x = testutil::UniformFloats(g.n * g.h * g.w * g.c, 3);
    std::vector<float> full(static_cast<size_t>(rows * K));
    kernels::Im2Col(g, x.data(), 0, rows, full.data());
    for (auto [k0, k1] : {std::tuple<int64_t, int64_t>{0, K},
                          {0, 1},
                          {3, K - 2},
                          {K / 2, K},
                          {g.c + 1, 2 * g.kw * g.c - 1}}) {
      k1 = std::min(k1, K);
      if (k1 <= k0) continue;
      const int64_t r0 = 1, r1 = rows - 1, ld = k1 - k0 + 5;
      std::vector<float> part(static_cast<size_t>((r1 - r0) * ld), -7.0f);
      kernels::Im2ColColumns(g, x.data(), r0, r1, k0, k1, part.data(), ld);
      for (int64_t r = r0; r < r1; ++r) {
        const float* want = full.data() + r * K + k0;
        const float* got = part.data() + (r - r0) * ld;
        ASSERT_EQ(std::memcmp(want, got, sizeof(float) * (k1 - k0)), 0)
            << "row " << r << " columns [" << k0 << ", " << k1 << ") of K " << K;
        for (int64_t j = k1 - k0; j < ld; ++j) ASSERT_EQ(got[j], -7.0f) << "past column " << k1;
      }
    }
  }
}

}  // namespace
}  // namespace troupe
