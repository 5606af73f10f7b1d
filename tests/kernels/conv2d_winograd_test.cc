// kernels/conv2d_winograd.h, through the Conv2D and Conv2DBackpropInput ops: every output is
// exactly the Winograd F(2x2, 3x3) arithmetic written out below (transforms in float, the 16
// products as fma chains over the channels) on every GEMM path and thread count, with odd
// output sizes, VALID and SAME padding and channel counts off the vector width; the input
// gradient is that arithmetic on dy and the rotated filter; and both stay close to the exact
// (double) sum.
#include "kernels/conv2d_winograd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernels/conv2d_winograd_transforms.h"
#include "kernels/gemm_packed.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using kernels::GemmPath;
using V = std::vector<int64_t>;

struct Shape {
  V x;  // n, h, w, c
  int64_t f;
  bool same;
};

// V[xi][c] = B^T d B of x's 4x4 tile (image b, tile row ty, column tx), zeros outside.
std::vector<float> TileV(const Tensor& x, int64_t b, int64_t ty, int64_t tx, int64_t pt,
                         int64_t pl) {
  const int64_t h = x.shape().dim(1), wd = x.shape().dim(2), c = x.shape().dim(3);
  const float* xp = x.data<float>();
  std::vector<float> v(static_cast<size_t>(16 * c));
  for (int64_t ci = 0; ci < c; ++ci) {
    float d[4][4], s[4][4];
    for (int a = 0; a < 4; ++a) {
      for (int k = 0; k < 4; ++k) {
        const int64_t iy = 2 * ty - pt + a, ix = 2 * tx - pl + k;
        d[a][k] =
            iy >= 0 && iy < h && ix >= 0 && ix < wd ? xp[((b * h + iy) * wd + ix) * c + ci] : 0.0f;
      }
    }
    for (int k = 0; k < 4; ++k) {
      s[0][k] = d[0][k] - d[2][k], s[1][k] = d[1][k] + d[2][k];
      s[2][k] = d[2][k] - d[1][k], s[3][k] = d[1][k] - d[3][k];
    }
    for (int a = 0; a < 4; ++a) {
      const float row[4] = {s[a][0] - s[a][2], s[a][1] + s[a][2], s[a][2] - s[a][1],
                            s[a][1] - s[a][3]};
      for (int k = 0; k < 4; ++k) v[static_cast<size_t>((a * 4 + k) * c + ci)] = row[k];
    }
  }
  return v;
}

// W[xi][f] = A dY A^T of dy's 2x2 block (image b, tile ty, tx), zeros past the edges.
std::vector<float> TileW(const Tensor& dy, int64_t b, int64_t ty, int64_t tx) {
  const int64_t oh = dy.shape().dim(1), ow = dy.shape().dim(2), f = dy.shape().dim(3);
  std::vector<float> w(static_cast<size_t>(16 * f));
  for (int64_t fi = 0; fi < f; ++fi) {
    float d[2][2];
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oy = 2 * ty + i, ox = 2 * tx + j;
        d[i][j] = oy < oh && ox < ow ? dy.data<float>()[((b * oh + oy) * ow + ox) * f + fi] : 0.0f;
      }
    }
    float col[4][2];
    for (int j = 0; j < 2; ++j) {
      col[0][j] = d[0][j], col[1][j] = d[0][j] + d[1][j], col[2][j] = d[0][j] - d[1][j];
      col[3][j] = -d[1][j];
    }
    for (int a = 0; a < 4; ++a) {
      const float row[4] = {col[a][0], col[a][0] + col[a][1], col[a][0] - col[a][1], -col[a][1]};
      for (int k = 0; k < 4; ++k) w[static_cast<size_t>((a * 4 + k) * f + fi)] = row[k];
    }
  }
  return w;
}

// The filter gradient of the same convolution, as conv2d_winograd.cc computes it: per block of
// kWinogradTileBlock tiles, fma chains over its tiles of V . W; the blocks added in order; then
// dw = G^T Z G.
std::vector<float> WinogradFilterGradReference(const Tensor& x, const Tensor& dy, int64_t pt,
                                               int64_t pl) {
  const int64_t n = x.shape().dim(0), c = x.shape().dim(3), f = dy.shape().dim(3);
  const int64_t th = (dy.shape().dim(1) + 1) / 2, tw = (dy.shape().dim(2) + 1) / 2;
  const int64_t total = n * th * tw;
  std::vector<float> z(static_cast<size_t>(16 * c * f), 0.0f);
  for (int64_t t0 = 0; t0 < total; t0 += kernels::kWinogradTileBlock) {
    const int64_t t1 = std::min(total, t0 + kernels::kWinogradTileBlock);
    std::vector<float> p(z.size(), 0.0f);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (th * tw), ty = t % (th * tw) / tw, tx = t % tw;
      const std::vector<float> v = TileV(x, b, ty, tx, pt, pl), w = TileW(dy, b, ty, tx);
      for (int xi = 0; xi < 16; ++xi) {
        for (int64_t ci = 0; ci < c; ++ci) {
          for (int64_t fi = 0; fi < f; ++fi) {
            float& acc = p[static_cast<size_t>((xi * c + ci) * f + fi)];
            acc = std::fma(v[static_cast<size_t>(xi * c + ci)], w[static_cast<size_t>(xi * f + fi)],
                           acc);
          }
        }
      }
    }
    for (size_t e = 0; e < z.size(); ++e) z[e] = t0 == 0 ? p[e] : z[e] + p[e];
  }
  std::vector<float> dw(static_cast<size_t>(9 * c * f));
  for (int64_t ci = 0; ci < c; ++ci) {
    for (int64_t fi = 0; fi < f; ++fi) {
      auto at = [&](int xi) { return z[static_cast<size_t>((xi * c + ci) * f + fi)]; };
      float r[3][4];
      for (int k = 0; k < 4; ++k) {
        const float z0 = at(k), z1 = at(4 + k), z2 = at(8 + k), z3 = at(12 + k);
        r[0][k] = z0 + (z1 + z2) * 0.5f, r[1][k] = (z1 - z2) * 0.5f;
        r[2][k] = (z1 + z2) * 0.5f + z3;
      }
      for (int i = 0; i < 3; ++i) {
        const float row[3] = {r[i][0] + (r[i][1] + r[i][2]) * 0.5f, (r[i][1] - r[i][2]) * 0.5f,
                              (r[i][1] + r[i][2]) * 0.5f + r[i][3]};
        for (int j = 0; j < 3; ++j)
          dw[static_cast<size_t>(((i * 3 + j) * c + ci) * f + fi)] = row[j];
      }
    }
  }
  return dw;
}

// The 3x3 convolution of x [n, h, w, c] with w [3, 3, c, f], stride 1, padded pt (top) and pl
// (left) and cut to oh x ow, computed the way conv2d_winograd.cc does, one scalar at a time.
std::vector<float> WinogradReference(const Tensor& x, const Tensor& w, int64_t pt, int64_t pl,
                                     int64_t oh, int64_t ow) {
  const int64_t n = x.shape().dim(0), c = x.shape().dim(3), f = w.shape().dim(3);
  const float* wp = w.data<float>();
  // U[xi][c][f] = G g G^T.
  std::vector<float> u(static_cast<size_t>(16 * c * f));
  for (int64_t ci = 0; ci < c; ++ci) {
    for (int64_t fi = 0; fi < f; ++fi) {
      float r[4][3];
      for (int j = 0; j < 3; ++j) {
        const float g0 = wp[(0 * 3 + j) * c * f + ci * f + fi];
        const float g1 = wp[(1 * 3 + j) * c * f + ci * f + fi];
        const float g2 = wp[(2 * 3 + j) * c * f + ci * f + fi];
        r[0][j] = g0, r[1][j] = ((g0 + g1) + g2) * 0.5f, r[2][j] = ((g0 - g1) + g2) * 0.5f;
        r[3][j] = g2;
      }
      for (int i = 0; i < 4; ++i) {
        const float row[4] = {r[i][0], ((r[i][0] + r[i][1]) + r[i][2]) * 0.5f,
                              ((r[i][0] - r[i][1]) + r[i][2]) * 0.5f, r[i][2]};
        for (int k = 0; k < 4; ++k)
          u[static_cast<size_t>(((i * 4 + k) * c + ci) * f + fi)] = row[k];
      }
    }
  }
  std::vector<float> y(static_cast<size_t>(n * oh * ow * f));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ty = 0; ty < (oh + 1) / 2; ++ty) {
      for (int64_t tx = 0; tx < (ow + 1) / 2; ++tx) {
        const std::vector<float> v = TileV(x, b, ty, tx, pt, pl);
        for (int64_t fi = 0; fi < f; ++fi) {
          float m[16];
          for (int xi = 0; xi < 16; ++xi) {
            float acc = 0.0f;
            for (int64_t ci = 0; ci < c; ++ci) {
              acc = std::fma(v[static_cast<size_t>(xi * c + ci)],
                             u[static_cast<size_t>((xi * c + ci) * f + fi)], acc);
            }
            m[xi] = acc;
          }
          float r0[4], r1[4];
          for (int k = 0; k < 4; ++k) {
            r0[k] = (m[k] + m[4 + k]) + m[8 + k];
            r1[k] = (m[4 + k] - m[8 + k]) - m[12 + k];
          }
          const float out[2][2] = {{(r0[0] + r0[1]) + r0[2], (r0[1] - r0[2]) - r0[3]},
                                   {(r1[0] + r1[1]) + r1[2], (r1[1] - r1[2]) - r1[3]}};
          for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 2; ++j) {
              const int64_t oy = 2 * ty + i, ox = 2 * tx + j;
              if (oy < oh && ox < ow)
                y[static_cast<size_t>(((b * oh + oy) * ow + ox) * f + fi)] = out[i][j];
            }
          }
        }
      }
    }
  }
  return y;
}

// The filter rotated by 180 degrees with its channel axes swapped: [3, 3, f, c].
Tensor RotatedFilter(const Tensor& w) {
  const int64_t c = w.shape().dim(2), f = w.shape().dim(3);
  Tensor r = Random({3, 3, f, c}, 0);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t ci = 0; ci < c; ++ci) {
        for (int64_t fi = 0; fi < f; ++fi) {
          r.data<float>()[((i * 3 + j) * f + fi) * c + ci] =
              w.data<float>()[(((2 - i) * 3 + (2 - j)) * c + ci) * f + fi];
        }
      }
    }
  }
  return r;
}

bool Same(const Tensor& t, const std::vector<float>& want) {
  return static_cast<size_t>(t.num_elements()) == want.size() &&
         std::memcmp(t.data<float>(), want.data(), want.size() * sizeof(float)) == 0;
}

const Shape kShapes[] = {
    {{2, 6, 6, 64}, 72, true},    // even, SAME
    {{1, 7, 5, 72}, 67, true},    // odd output sizes; channels past the 8-float vectors
    {{2, 9, 8, 64}, 80, false},   // VALID: 7 x 6
    {{3, 5, 5, 128}, 96, true},   // several kc slices; 27 tiles, enough for the input gradient
    {{1, 32, 33, 64}, 64, true},  // 272 tiles: two filter-gradient blocks; the largest filter
                                  // whose products run on small tiles (SmallProducts)
    {{2, 7, 7, 32}, 32, true},    // ResNet-20's 32 channels
    {{2, 8, 6, 40}, 33, false},   // VALID; neither channel count a whole vector
    {{2, 6, 7, 16}, 24, true},    // 16 channels, the fewest Winograd takes
};

// The filter transform is paid per call, so Winograd needs enough tiles: ResNet-50's 7x7x512
// from 4 images (16 tiles each; the input gradient from 32), 14x14x256 from 1 (from 3).
TEST(Conv2DWinogradTest, NeedsEnoughTilesForTheFilterTransform) {
  auto geo = [](int64_t n, int64_t hw, int64_t c) {
    kernels::ConvGeo g{n, hw, hw, c, 3, 3, c, hw, hw, 1, 1, 1, 1};
    return g;
  };
  using kernels::WinogradPass;
  for (WinogradPass pass : {WinogradPass::kForward, WinogradPass::kFilterGrad}) {
    EXPECT_FALSE(kernels::UseWinograd(geo(3, 7, 512), sizeof(float), pass));
    EXPECT_TRUE(kernels::UseWinograd(geo(4, 7, 512), sizeof(float), pass));
    EXPECT_TRUE(kernels::UseWinograd(geo(1, 14, 256), sizeof(float), pass));
  }
  EXPECT_FALSE(kernels::UseWinograd(geo(31, 7, 512), sizeof(float), WinogradPass::kInputGrad));
  EXPECT_TRUE(kernels::UseWinograd(geo(32, 7, 512), sizeof(float), WinogradPass::kInputGrad));
  EXPECT_FALSE(kernels::UseWinograd(geo(2, 14, 256), sizeof(float), WinogradPass::kInputGrad));
  EXPECT_TRUE(kernels::UseWinograd(geo(3, 14, 256), sizeof(float), WinogradPass::kInputGrad));
  // 16+ channels each way where the products run on small tiles (ResNet-20's 3x3s), else 32+.
  for (WinogradPass pass :
       {WinogradPass::kForward, WinogradPass::kInputGrad, WinogradPass::kFilterGrad}) {
    EXPECT_TRUE(kernels::UseWinograd(geo(1, 7, 64), sizeof(float), pass));
    EXPECT_TRUE(kernels::UseWinograd(geo(128, 28, 16), sizeof(float), pass));
    EXPECT_FALSE(kernels::UseWinograd(geo(128, 28, 8), sizeof(float), pass));
  }
  kernels::ConvGeo wide = geo(8, 14, 24);
  wide.f = 200;  // 24 x 200: past the small tiles' filters, so 32+ channels are needed
  EXPECT_FALSE(kernels::UseWinograd(wide, sizeof(float), WinogradPass::kForward));
  wide.c = 32;
  EXPECT_TRUE(kernels::UseWinograd(wide, sizeof(float), WinogradPass::kForward));
  // Doubles never.
  EXPECT_FALSE(kernels::UseWinograd(geo(32, 7, 512), sizeof(double), WinogradPass::kForward));
}

TEST(Conv2DWinogradTest, IsItsArithmeticOnEveryPathAndThreadCount) {
  ThreadPool three(3, "three");
  std::vector<GemmPath> paths = {GemmPath::kScalar, GemmPath::kAvx2, GemmPath::kAuto};
  if (kernels::HaveGemmPackedAvx512()) paths.push_back(GemmPath::kAvx512);
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(TensorShape(s.x).ToString() + " -> " + std::to_string(s.f));
    const int64_t h = s.x[1], w = s.x[2], c = s.x[3];
    Tensor x = Random(TensorShape(s.x), 1), f = Random({3, 3, c, s.f}, 2);
    const int64_t pad = s.same ? 1 : 0, oh = s.same ? h : h - 2, ow = s.same ? w : w - 2;
    AttrMap a{{"strides", V{1, 1, 1, 1}}, {"padding", std::string(s.same ? "SAME" : "VALID")}};
    Tensor dy = Random({s.x[0], oh, ow, s.f}, 3);
    const std::vector<float> want_y = WinogradReference(x, f, pad, pad, oh, ow);
    // dx: dy correlated with the rotated filter, padded 2 - pad on top and left.
    const std::vector<float> want_dx =
        WinogradReference(dy, RotatedFilter(f), 2 - pad, 2 - pad, h, w);
    const std::vector<float> want_dw = WinogradFilterGradReference(x, dy, pad, pad);
    AttrMap bi = a, bf = a;
    bi.Set("input_sizes", s.x);
    bf.Set("filter_sizes", V{3, 3, c, s.f});
    // The tile transforms' 32- and 64-byte variants (64: where the CPU has AVX-512).
    for (int width : {32, 64}) {
      kernels::winograd::SetTileTransformWidthForTesting(width);
      for (GemmPath path : paths) {
        kernels::SetGemmPathForTesting(path);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
          SCOPED_TRACE("width " + std::to_string(width) + " path " +
                       std::to_string(static_cast<int>(path)));
          EXPECT_TRUE(Same((*RunOn(pool, "Conv2D", {x, f}, a))[0], want_y));
          EXPECT_TRUE(Same((*RunOn(pool, "Conv2DBackpropInput", {f, dy}, bi))[0], want_dx));
          EXPECT_TRUE(Same((*RunOn(pool, "Conv2DBackpropFilter", {x, dy}, bf))[0], want_dw));
        }
      }
    }
    kernels::winograd::SetTileTransformWidthForTesting(0);
    kernels::SetGemmPathForTesting(GemmPath::kAuto);
  }
}

// Against the exact sum, per element (forward and filter gradient): within 4e-6 of the sum of |x|
// |w| over its window (the transforms add a few roundings to the plain sum's; its own error is
// ~1e-7 of that).
TEST(Conv2DWinogradTest, IsCloseToTheExactSum) {
  const Shape s{{2, 9, 7, 128}, 64, true};
  const int64_t n = s.x[0], h = s.x[1], w = s.x[2], c = s.x[3], f = s.f;
  Tensor x = Random(TensorShape(s.x), 4), wt = Random({3, 3, c, f}, 5);
  Tensor y =
      Run1("Conv2D", {x, wt}, {{"strides", V{1, 1, 1, 1}}, {"padding", std::string("SAME")}});
  const float* xp = x.data<float>();
  const float* wp = wt.data<float>();
  double worst = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oy = 0; oy < h; ++oy) {
      for (int64_t ox = 0; ox < w; ++ox) {
        for (int64_t fi = 0; fi < f; ++fi) {
          double exact = 0, scale = 0;
          for (int64_t i = 0; i < 3; ++i) {
            for (int64_t j = 0; j < 3; ++j) {
              const int64_t iy = oy - 1 + i, ix = ox - 1 + j;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (int64_t ci = 0; ci < c; ++ci) {
                const double p = double{xp[((b * h + iy) * w + ix) * c + ci]} *
                                 wp[((i * 3 + j) * c + ci) * f + fi];
                exact += p, scale += std::fabs(p);
              }
            }
          }
          const double got = y.data<float>()[((b * h + oy) * w + ox) * f + fi];
          worst = std::max(worst, std::fabs(got - exact) / scale);
        }
      }
    }
  }
  EXPECT_LT(worst, 4e-6);
  // The filter gradient, summed over 126 pixels per element.
  Tensor dy = Random(y.shape(), 6);
  Tensor dw = Run1("Conv2DBackpropFilter", {x, dy},
                   {{"strides", V{1, 1, 1, 1}},
                    {"padding", std::string("SAME")},
                    {"filter_sizes", V{3, 3, c, f}}});
  worst = 0;
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t ci = 0; ci < c; ++ci) {
        for (int64_t fi = 0; fi < f; ++fi) {
          double exact = 0, scale = 0;
          for (int64_t b = 0; b < n; ++b) {
            for (int64_t oy = 0; oy < h; ++oy) {
              for (int64_t ox = 0; ox < w; ++ox) {
                const int64_t iy = oy - 1 + i, ix = ox - 1 + j;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const double p = double{xp[((b * h + iy) * w + ix) * c + ci]} *
                                 dy.data<float>()[((b * h + oy) * w + ox) * f + fi];
                exact += p, scale += std::fabs(p);
              }
            }
          }
          const double got = dw.data<float>()[((i * 3 + j) * c + ci) * f + fi];
          worst = std::max(worst, std::fabs(got - exact) / scale);
        }
      }
    }
  }
  EXPECT_LT(worst, 4e-6);
}

}  // namespace
}  // namespace troupe
