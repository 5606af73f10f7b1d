// DepthwiseConv2dNative against a direct loop (multipliers, SAME/VALID, strides, dilations),
// its backprops against numerical gradients, errors, and thread-count independence.
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

struct DwCase {
  TensorShape x, f;  // f: [kh, kw, c, m]
  int64_t sh, sw;
  bool same;
  int64_t dh = 1, dw = 1;
};

const std::vector<DwCase> kCases = {
    {{2, 8, 8, 16}, {3, 3, 16, 1}, 1, 1, true},  // MobileNet-like, one vector of channels
    {{1, 7, 9, 3}, {3, 2, 3, 2}, 2, 3, true},    // multiplier 2, odd channels
    {{2, 6, 5, 5}, {2, 3, 5, 3}, 1, 2, false},
    {{1, 9, 9, 37}, {3, 3, 37, 1}, 2, 2, true},  // vector body + scalar tail
    {{1, 9, 10, 4}, {3, 3, 4, 2}, 1, 1, true, 2, 3},
    {{2, 10, 8, 6}, {3, 2, 6, 1}, 2, 1, false, 2, 2},
};

AttrMap DwAttrs(const DwCase& c) {
  AttrMap a{{"strides", V{1, c.sh, c.sw, 1}}, {"padding", std::string(c.same ? "SAME" : "VALID")}};
  if (c.dh != 1 || c.dw != 1) a.Set("dilations", V{1, c.dh, c.dw, 1});
  return a;
}

int64_t OutDim(int64_t in, int64_t k, int64_t s, bool same, int64_t* pad) {
  if (same) {
    const int64_t out = (in + s - 1) / s;
    *pad = std::max<int64_t>(0, (out - 1) * s + k - in) / 2;
    return out;
  }
  *pad = 0;
  return (in - k) / s + 1;
}

template <typename T>
Tensor NaiveDepthwise(const Tensor& x, const Tensor& f, const DwCase& c) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), ch = x.dim(3);
  const int64_t kh = f.dim(0), kw = f.dim(1), m = f.dim(3);
  int64_t pt, pl;
  const int64_t oh = OutDim(h, (kh - 1) * c.dh + 1, c.sh, c.same, &pt);
  const int64_t ow = OutDim(w, (kw - 1) * c.dw + 1, c.sw, c.same, &pl);
  Tensor y = *Tensor::Zeros(x.dtype(), {n, oh, ow, ch * m});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t ci = 0; ci < ch; ++ci)
          for (int64_t k = 0; k < m; ++k) {
            double s = 0;
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t ih = i * c.sh - pt + p * c.dh, iw = j * c.sw - pl + q * c.dw;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                s += double(x.data<T>()[((b * h + ih) * w + iw) * ch + ci]) *
                     double(f.data<T>()[((p * kw + q) * ch + ci) * m + k]);
              }
            y.data<T>()[((b * oh + i) * ow + j) * ch * m + ci * m + k] = static_cast<T>(s);
          }
  return y;
}

TEST(DepthwiseConvTest, ForwardMatchesDirectLoop) {
  uint32_t seed = 1;
  for (const DwCase& c : kCases) {
    SCOPED_TRACE(c.x.ToString() + " * " + c.f.ToString());
    Tensor x = Random(c.x, seed++), f = Random(c.f, seed++);
    ExpectNear(Run1("DepthwiseConv2dNative", {x, f}, DwAttrs(c)), NaiveDepthwise<float>(x, f, c),
               1e-5);
    Tensor xd = Random<double>(c.x, seed++), fd = Random<double>(c.f, seed++);
    ExpectNear(Run1("DepthwiseConv2dNative", {xd, fd}, DwAttrs(c)),
               NaiveDepthwise<double>(xd, fd, c), 1e-12);
  }
}

TEST(DepthwiseConvTest, GradientsMatchNumerical) {
  uint32_t seed = 100;
  for (const DwCase& c : kCases) {
    SCOPED_TRACE(c.x.ToString() + " * " + c.f.ToString());
    Tensor x = Random<double>(c.x, seed++), f = Random<double>(c.f, seed++);
    AttrMap attrs = DwAttrs(c);
    Tensor y = Run1("DepthwiseConv2dNative", {x, f}, attrs);
    Tensor w = Random<double>(y.shape(), seed++);
    AttrMap in_attrs = attrs;
    in_attrs.Set("input_sizes", c.x.dims());
    Tensor dx = Run1("DepthwiseConv2dNativeBackpropInput", {f, w}, in_attrs);
    CheckGradient(
        [&](const Tensor& xx) {
          return Run1("DepthwiseConv2dNative", {xx, f}, attrs);
        },
        x, w, dx);
    AttrMap f_attrs = attrs;
    f_attrs.Set("filter_sizes", c.f.dims());
    Tensor df = Run1("DepthwiseConv2dNativeBackpropFilter", {x, w}, f_attrs);
    CheckGradient(
        [&](const Tensor& ff) {
          return Run1("DepthwiseConv2dNative", {x, ff}, attrs);
        },
        f, w, df);
    in_attrs.Set("input_sizes", V{-1, c.x.dim(1), c.x.dim(2), c.x.dim(3)});
    EXPECT_TRUE(Run1("DepthwiseConv2dNativeBackpropInput", {f, w}, in_attrs).BitEqual(dx));
  }
}

TEST(DepthwiseConvTest, Errors) {
  const std::string op = "DepthwiseConv2dNative";
  Tensor x = Random({2, 8, 8, 3}, 1);
  AttrMap a{{"strides", V{1, 1, 1, 1}}, {"padding", std::string("SAME")}};
  EXPECT_INVALID(RunStatus(op, {x, Random({3, 3, 4, 1}, 2)}, a),
                 "DepthwiseConv2dNative:", "'input' [2,8,8,3] has 3 channels",
                 "'filter' [3,3,4,1] expects 4");
  EXPECT_INVALID(RunStatus(op, {Random({8, 8, 3}, 1), Random({3, 3, 3, 1}, 2)}, a),
                 "DepthwiseConv2dNative:", "'input' must be rank 4");
  AttrMap bad_dil = a;
  bad_dil.Set("dilations", V{2, 1, 1, 1});
  EXPECT_INVALID(RunStatus(op, {x, Random({3, 3, 3, 1}, 2)}, bad_dil),
                 "DepthwiseConv2dNative:", "'dilations' [2,1,1,1]");
  AttrMap bi = a;
  bi.Set("input_sizes", V{2, 8, 8, 3});
  EXPECT_INVALID(RunStatus("DepthwiseConv2dNativeBackpropInput",
                           {Random({3, 3, 3, 2}, 2), Random({2, 8, 8, 3}, 3)}, bi),
                 "DepthwiseConv2dNativeBackpropInput:", "'out_backprop' [2,8,8,3]", "[2,8,8,6]");
  AttrMap bf = a;
  bf.Set("filter_sizes", V{3, 3, 3, -1});
  EXPECT_INVALID(RunStatus("DepthwiseConv2dNativeBackpropFilter", {x, Random({2, 8, 8, 3}, 3)}, bf),
                 "DepthwiseConv2dNativeBackpropFilter:", "'filter_sizes' [3,3,3,?]", "known");
}

TEST(DepthwiseConvTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), three(3, "three");
  for (auto [xs, fs, dil] : {std::tuple{V{8, 16, 16, 32}, V{3, 3, 32, 1}, 1},
                             std::tuple{V{4, 12, 12, 6}, V{3, 3, 6, 2}, 2}}) {
    SCOPED_TRACE(TensorShape(fs).ToString());
    Tensor x = Random(TensorShape(xs), 1), f = Random(TensorShape(fs), 2);
    AttrMap a{{"strides", V{1, 1, 1, 1}}, {"padding", std::string("SAME")}};
    if (dil != 1) a.Set("dilations", V{1, dil, dil, 1});
    Tensor y = (*RunOn(&one, "DepthwiseConv2dNative", {x, f}, a))[0];
    EXPECT_TRUE(y.BitEqual((*RunOn(&three, "DepthwiseConv2dNative", {x, f}, a))[0]));
    EXPECT_TRUE(y.BitEqual((*RunOn(nullptr, "DepthwiseConv2dNative", {x, f}, a))[0]));
    Tensor dy = Random(y.shape(), 3);
    AttrMap bf = a, bi = a;
    bf.Set("filter_sizes", fs);
    bi.Set("input_sizes", xs);
    for (auto [op, in, attrs] :
         {std::tuple{"DepthwiseConv2dNativeBackpropFilter", std::vector{x, dy}, bf},
          std::tuple{"DepthwiseConv2dNativeBackpropInput", std::vector{f, dy}, bi}}) {
      Tensor g1 = (*RunOn(&one, op, in, attrs))[0];
      EXPECT_TRUE(g1.BitEqual((*RunOn(&three, op, in, attrs))[0])) << op;
      EXPECT_TRUE(g1.BitEqual((*RunOn(nullptr, op, in, attrs))[0])) << op;
    }
  }
}

}  // namespace
}  // namespace troupe
