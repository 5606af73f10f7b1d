// MaxPool/AvgPool against direct loops, their gradients against numerical derivatives (and
// TF's first-maximum tie rule), errors, and thread-count independence.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

struct PoolCase {
  TensorShape x;
  int64_t kh, kw, sh, sw;
  bool same;
};
const std::vector<PoolCase> kCases = {{{2, 28, 28, 6}, 2, 2, 2, 2, false},  // LeNet pool1
                                      {{2, 10, 10, 16}, 2, 2, 2, 2, false},
                                      {{1, 7, 5, 3}, 3, 2, 2, 2, true},
                                      {{2, 5, 6, 2}, 3, 3, 1, 2, true},
                                      {{1, 6, 6, 1}, 2, 3, 3, 1, false}};

AttrMap PoolAttrs(const PoolCase& c) {
  return {{"ksize", V{1, c.kh, c.kw, 1}},
          {"strides", V{1, c.sh, c.sw, 1}},
          {"padding", std::string(c.same ? "SAME" : "VALID")}};
}

Tensor NaivePool(const Tensor& x, const PoolCase& c, bool is_max) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), ch = x.dim(3);
  auto out = [&](int64_t in, int64_t k, int64_t s, int64_t* pad) {
    if (c.same) {
      int64_t o = (in + s - 1) / s;
      *pad = std::max<int64_t>(0, (o - 1) * s + k - in) / 2;
      return o;
    }
    *pad = 0;
    return (in - k) / s + 1;
  };
  int64_t pt, pl;
  const int64_t oh = out(h, c.kh, c.sh, &pt), ow = out(w, c.kw, c.sw, &pl);
  Tensor y = *Tensor::Zeros(DType::kFloat32, {n, oh, ow, ch});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t k = 0; k < ch; ++k) {
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0;
          int count = 0;
          for (int64_t p = 0; p < c.kh; ++p)
            for (int64_t q = 0; q < c.kw; ++q) {
              int64_t ih = i * c.sh - pt + p, iw = j * c.sw - pl + q;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              double v = x.data<float>()[((b * h + ih) * w + iw) * ch + k];
              acc = is_max ? std::max(acc, v) : acc + v;
              ++count;
            }
          y.data<float>()[((b * oh + i) * ow + j) * ch + k] =
              static_cast<float>(is_max ? acc : acc / count);
        }
  return y;
}

TEST(PoolingTest, ForwardMatchesDirectLoop) {
  uint32_t seed = 1;
  for (const PoolCase& c : kCases) {
    SCOPED_TRACE(c.x.ToString());
    Tensor x = Random(c.x, seed++);
    ExpectNear(Run1("MaxPool", {x}, PoolAttrs(c)), NaivePool(x, c, true), 1e-7);
    ExpectNear(Run1("AvgPool", {x}, PoolAttrs(c)), NaivePool(x, c, false), 1e-6);
  }
}

TEST(PoolingTest, GradientsMatchNumerical) {
  uint32_t seed = 50;
  for (const PoolCase& c : kCases) {
    if (c.x.num_elements() > 500) continue;
    SCOPED_TRACE(c.x.ToString());
    AttrMap a = PoolAttrs(c);
    Tensor x = Random<double>(c.x, seed++);
    Tensor y = Run1("MaxPool", {x}, a);
    Tensor w = Random<double>(y.shape(), seed++);
    Tensor dx = Run1("MaxPoolGrad", {x, y, w}, a);
    CheckGradient([&](const Tensor& xx) { return Run1("MaxPool", {xx}, a); }, x, w, dx);
    AttrMap ga = a;
    ga.Set("orig_input_shape", c.x.dims());
    Tensor da = Run1("AvgPoolGrad", {w}, ga);
    CheckGradient([&](const Tensor& xx) { return Run1("AvgPool", {xx}, a); }, x, w, da);
  }
}

TEST(PoolingTest, MaxPoolGradTiesGoToFirstMaximum) {
  // All-equal window (e.g. ReLU zeros): TF routes the gradient to the first element scanned.
  Tensor x = Make<float>({0, 0, 0, 0}, {1, 2, 2, 1});
  AttrMap a{
      {"ksize", V{1, 2, 2, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("VALID")}};
  Tensor y = Run1("MaxPool", {x}, a);
  Tensor dx = Run1("MaxPoolGrad", {x, y, Make<float>({3}, {1, 1, 1, 1})}, a);
  EXPECT_EQ(Values<float>(dx), (std::vector<float>{3, 0, 0, 0}));
}

// The gradient of a 3x3/2 SAME max pool (overlapping windows, padded edges) on values with
// many ties and a NaN, against the definition: per channel, scan the window in (h, w) order,
// keep the first maximum, add the output's gradient there (in output order).
TEST(PoolingTest, MaxPoolGradMatchesThePerChannelScan) {
  const int64_t n = 2, h = 9, w = 7, c = 5;
  Tensor x = Random({n, h, w, c}, 7);
  float* xv = x.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) xv[i] = std::floor(xv[i] * 3.0f);  // ties
  xv[3 * c + 1] = std::numeric_limits<float>::quiet_NaN();
  AttrMap a{{"ksize", V{1, 3, 3, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("SAME")}};
  Tensor y = Run1("MaxPool", {x}, a);
  Tensor dy = Random(y.shape(), 8);
  Tensor dx = Run1("MaxPoolGrad", {x, y, dy}, a);
  const int64_t oh_n = y.dim(1), ow_n = y.dim(2);
  const int64_t top = std::max<int64_t>((oh_n - 1) * 2 + 3 - h, 0) / 2;  // SAME's padding
  const int64_t left = std::max<int64_t>((ow_n - 1) * 2 + 3 - w, 0) / 2;
  std::vector<float> want(static_cast<size_t>(x.num_elements()), 0.0f);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t oh = 0; oh < oh_n; ++oh) {
      for (int64_t ow = 0; ow < ow_n; ++ow) {
        for (int64_t ch = 0; ch < c; ++ch) {
          int64_t best = -1;
          const int64_t i0 = 2 * oh - top, j0 = 2 * ow - left;
          for (int64_t i = std::max<int64_t>(0, i0); i < std::min(h, i0 + 3); ++i) {
            for (int64_t j = std::max<int64_t>(0, j0); j < std::min(w, j0 + 3); ++j) {
              const int64_t idx = ((b * h + i) * w + j) * c + ch;
              if (best < 0 || xv[idx] > xv[best]) best = idx;
            }
          }
          want[static_cast<size_t>(best)] +=
              dy.data<float>()[((b * oh_n + oh) * ow_n + ow) * c + ch];
        }
      }
    }
  }
  EXPECT_EQ(Values<float>(dx), want);
}

// MaxPoolGrad gathers per input pixel; against the scatter over windows in output order, bit
// for bit, for every geometry of kCases plus windows wider than their stride in one dim and
// narrower in the other, on values with ties (so windows share maxima and sums have order).
TEST(PoolingTest, MaxPoolGradEqualsScatterInWindowOrder) {
  std::vector<PoolCase> cases = kCases;
  cases.push_back({{2, 11, 9, 4}, 3, 1, 1, 2, true});
  cases.push_back({{1, 8, 8, 9}, 4, 4, 2, 3, false});
  cases.push_back({{1, 2, 3, 2}, 5, 5, 1, 1, true});  // windows past every edge
  uint32_t seed = 50;
  for (const PoolCase& pc : cases) {
    Tensor x = Random(pc.x, ++seed);
    float* xv = x.data<float>();
    for (int64_t i = 0; i < x.num_elements(); ++i) xv[i] = std::floor(xv[i] * 2.0f);
    const AttrMap a = PoolAttrs(pc);
    Tensor y = Run1("MaxPool", {x}, a);
    Tensor dy = Random(y.shape(), ++seed);
    Tensor dx = Run1("MaxPoolGrad", {x, y, dy}, a);
    const int64_t h = pc.x.dim(1), w = pc.x.dim(2), c = pc.x.dim(3);
    const int64_t oh_n = y.dim(1), ow_n = y.dim(2);
    const int64_t top = pc.same ? std::max<int64_t>((oh_n - 1) * pc.sh + pc.kh - h, 0) / 2 : 0;
    const int64_t left = pc.same ? std::max<int64_t>((ow_n - 1) * pc.sw + pc.kw - w, 0) / 2 : 0;
    std::vector<float> want(static_cast<size_t>(x.num_elements()), 0.0f);
    for (int64_t b = 0; b < pc.x.dim(0); ++b)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow)
          for (int64_t ch = 0; ch < c; ++ch) {
            int64_t best = -1;
            const int64_t i0 = oh * pc.sh - top, j0 = ow * pc.sw - left;
            for (int64_t i = std::max<int64_t>(0, i0); i < std::min(h, i0 + pc.kh); ++i)
              for (int64_t j = std::max<int64_t>(0, j0); j < std::min(w, j0 + pc.kw); ++j) {
                const int64_t idx = ((b * h + i) * w + j) * c + ch;
                if (best < 0 || xv[idx] > xv[best]) best = idx;
              }
            if (best >= 0) {
              want[static_cast<size_t>(best)] +=
                  dy.data<float>()[((b * oh_n + oh) * ow_n + ow) * c + ch];
            }
          }
    std::vector<float> got = Values<float>(dx);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << pc.x.ToString() << " k " << pc.kh << "x" << pc.kw << " s " << pc.sh << "x" << pc.sw;
  }
}

TEST(PoolingTest, Errors) {
  Tensor x = Random({1, 4, 4, 2}, 1);
  EXPECT_INVALID(RunStatus("MaxPool", {x},
                           {{"ksize", V{1, 0, 2, 1}},
                            {"strides", V{1, 2, 2, 1}},
                            {"padding", std::string("VALID")}}),
                 "MaxPool:", "'ksize' [1,0,2,1]", "positive");
  EXPECT_INVALID(RunStatus("AvgPool", {x},
                           {{"ksize", V{1, 2, 2, 1}},
                            {"strides", V{1, 2, -1, 1}},
                            {"padding", std::string("VALID")}}),
                 "AvgPool:", "'strides' [1,2,-1,1]");
  EXPECT_INVALID(RunStatus("MaxPool", {x},
                           {{"ksize", V{1, 5, 2, 1}},
                            {"strides", V{1, 2, 2, 1}},
                            {"padding", std::string("VALID")}}),
                 "MaxPool:", "larger than the input");
  EXPECT_INVALID(RunStatus("MaxPool", {Random({4, 4, 2}, 1)},
                           {{"ksize", V{1, 2, 2, 1}},
                            {"strides", V{1, 2, 2, 1}},
                            {"padding", std::string("VALID")}}),
                 "MaxPool:", "'input' must be rank 4", "[4,4,2]");
  AttrMap a{
      {"ksize", V{1, 2, 2, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("VALID")}};
  EXPECT_INVALID(RunStatus("MaxPoolGrad", {x, Random({1, 2, 2, 2}, 2), Random({1, 3, 2, 2}, 3)}, a),
                 "MaxPoolGrad:", "'grad' has shape [1,3,2,2]", "[1,2,2,2]");
  AttrMap g = a;
  g.Set("orig_input_shape", V{1, 4, 4, 2});
  EXPECT_INVALID(RunStatus("AvgPoolGrad", {Random({1, 3, 2, 2}, 3)}, g),
                 "AvgPoolGrad:", "'grad' has shape [1,3,2,2]");
}

TEST(PoolingTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), three(3, "three");
  Tensor x = Random({16, 28, 28, 6}, 1);
  AttrMap a{{"ksize", V{1, 3, 3, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("SAME")}};
  Tensor y = (*RunOn(&one, "MaxPool", {x}, a))[0];
  Tensor dy = Random(y.shape(), 2);
  AttrMap g = a;
  g.Set("orig_input_shape", x.shape().dims());
  for (auto [op, in, attrs] :
       {std::tuple{"MaxPool", std::vector{x}, a}, std::tuple{"AvgPool", std::vector{x}, a},
        std::tuple{"MaxPoolGrad", std::vector{x, y, dy}, a},
        std::tuple{"AvgPoolGrad", std::vector{dy}, g}}) {
    EXPECT_TRUE((*RunOn(&one, op, in, attrs))[0].BitEqual((*RunOn(&three, op, in, attrs))[0]))
        << op;
  }
}

}  // namespace
}  // namespace troupe
