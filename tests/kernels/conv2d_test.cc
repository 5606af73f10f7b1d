// Conv2D against a direct loop (SAME/VALID, strides, dilations, odd shapes),
// Conv2DBackpropInput and Conv2DBackpropFilter against numerical gradients, errors, and
// thread-count independence, and the im2col + GEMM paths against the exact fmaf chains they
// promise.
#include <cmath>
#include <cstring>

#include "kernels/conv2d_direct.h"
#include "kernels/gemm_packed.h"
#include "kernels/im2col.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

int64_t OutDim(int64_t in, int64_t k, int64_t s, bool same, int64_t* pad) {
  if (same) {
    int64_t out = (in + s - 1) / s;
    *pad = std::max<int64_t>(0, (out - 1) * s + k - in) / 2;
    return out;
  }
  *pad = 0;
  return (in - k) / s + 1;
}

template <typename T>
Tensor NaiveConv(const Tensor& x, const Tensor& f, int64_t sh, int64_t sw, bool same,
                 int64_t dh = 1, int64_t dw = 1) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t kh = f.dim(0), kw = f.dim(1), fo = f.dim(3);
  int64_t pt, pl;
  const int64_t oh = OutDim(h, (kh - 1) * dh + 1, sh, same, &pt);
  const int64_t ow = OutDim(w, (kw - 1) * dw + 1, sw, same, &pl);
  Tensor y = *Tensor::Zeros(x.dtype(), {n, oh, ow, fo});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t o = 0; o < fo; ++o) {
          double s = 0;
          for (int64_t p = 0; p < kh; ++p)
            for (int64_t q = 0; q < kw; ++q)
              for (int64_t ci = 0; ci < c; ++ci) {
                int64_t ih = i * sh - pt + p * dh, iw = j * sw - pl + q * dw;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                s += double(x.data<T>()[((b * h + ih) * w + iw) * c + ci]) *
                     double(f.data<T>()[((p * kw + q) * c + ci) * fo + o]);
              }
          y.data<T>()[((b * oh + i) * ow + j) * fo + o] = static_cast<T>(s);
        }
  return y;
}

struct ConvCase {
  TensorShape x, f;
  int64_t sh, sw;
  bool same;
  int64_t dh = 1, dw = 1;
};
const std::vector<ConvCase> kCases = {
    {{2, 28, 28, 1}, {5, 5, 1, 6}, 1, 1, true},    // LeNet conv1
    {{2, 14, 14, 6}, {5, 5, 6, 16}, 1, 1, false},  // LeNet conv2
    {{1, 7, 9, 3}, {3, 2, 3, 4}, 2, 3, true},
    {{3, 8, 5, 2}, {3, 3, 2, 5}, 2, 1, false},
    {{1, 4, 4, 1}, {4, 4, 1, 1}, 1, 1, false},
    {{2, 5, 5, 3}, {1, 1, 3, 2}, 1, 1, true},
    {{1, 6, 6, 2}, {2, 2, 2, 3}, 3, 3, true},
    // One input channel, unit width stride: the direct (non-im2col) kernels.
    {{2, 7, 6, 1}, {3, 3, 1, 4}, 2, 1, true},
    {{1, 5, 8, 1}, {2, 4, 1, 3}, 1, 1, false},
    // Few input channels and 64 or 128 bytes of output channels (16/32 floats, 8/16 doubles):
    // the register-tiled direct kernels, with padding, strides and partial tiles.
    {{2, 6, 7, 3}, {3, 3, 3, 16}, 2, 1, true},
    {{1, 7, 8, 2}, {2, 3, 2, 8}, 1, 2, true},
    {{2, 5, 6, 4}, {3, 2, 4, 32}, 1, 1, false},
    {{1, 9, 9, 5}, {5, 5, 5, 16}, 1, 1, false},
    {{1, 6, 20, 2}, {3, 3, 2, 16}, 1, 1, true},
    // The direct kernels' wider cases (conv2d_direct.h): one channel into a vector (forward),
    // 17-32 channels into 32 floats (16 doubles), 64 floats (32 doubles) of outputs.
    {{2, 7, 6, 1}, {3, 3, 1, 16}, 2, 1, true},
    {{2, 6, 5, 24}, {3, 3, 24, 32}, 2, 1, true},
    {{2, 7, 7, 32}, {3, 3, 32, 32}, 1, 2, false},
    {{1, 8, 7, 16}, {3, 3, 16, 64}, 2, 2, true},
    {{1, 6, 6, 32}, {3, 3, 32, 16}, 1, 1, true},
    // Dilated filters (the im2col path, also for shapes the direct kernels would take).
    {{2, 9, 9, 3}, {3, 3, 3, 4}, 1, 1, true, 2, 2},
    {{1, 10, 8, 2}, {3, 2, 2, 5}, 2, 1, false, 2, 3},
    {{2, 9, 8, 1}, {3, 3, 1, 4}, 1, 1, true, 3, 1},
    {{1, 8, 9, 3}, {2, 3, 3, 16}, 2, 2, true, 2, 2}};

AttrMap ConvAttrs(const ConvCase& c) {
  AttrMap a{{"strides", V{1, c.sh, c.sw, 1}}, {"padding", std::string(c.same ? "SAME" : "VALID")}};
  if (c.dh != 1 || c.dw != 1) a.Set("dilations", V{1, c.dh, c.dw, 1});
  return a;
}

TEST(Conv2DTest, ForwardMatchesDirectLoop) {
  uint32_t seed = 1;
  for (const ConvCase& c : kCases) {
    SCOPED_TRACE(c.x.ToString() + " * " + c.f.ToString());
    Tensor x = Random(c.x, seed++), f = Random(c.f, seed++);
    ExpectNear(Run1("Conv2D", {x, f}, ConvAttrs(c)),
               NaiveConv<float>(x, f, c.sh, c.sw, c.same, c.dh, c.dw), 1e-5);
  }
}

TEST(Conv2DTest, GradientsMatchNumerical) {
  uint32_t seed = 100;
  for (const ConvCase& c : kCases) {
    if (c.x.dim(1) > 10) continue;  // keep the O(n^2) numerical check small
    SCOPED_TRACE(c.x.ToString() + " * " + c.f.ToString());
    Tensor x = Random<double>(c.x, seed++), f = Random<double>(c.f, seed++);
    AttrMap attrs = ConvAttrs(c);
    Tensor y = Run1("Conv2D", {x, f}, attrs);
    Tensor w = Random<double>(y.shape(), seed++);
    AttrMap in_attrs = attrs;
    in_attrs.Set("input_sizes", c.x.dims());
    Tensor dx = Run1("Conv2DBackpropInput", {f, w}, in_attrs);
    CheckGradient([&](const Tensor& xx) { return Run1("Conv2D", {xx, f}, attrs); }, x, w, dx);
    AttrMap f_attrs = attrs;
    f_attrs.Set("filter_sizes", c.f.dims());
    Tensor df = Run1("Conv2DBackpropFilter", {x, w}, f_attrs);
    CheckGradient([&](const Tensor& ff) { return Run1("Conv2D", {x, ff}, attrs); }, f, w, df);
    // A -1 batch in input_sizes takes the batch of out_backprop.
    in_attrs.Set("input_sizes", V{-1, c.x.dim(1), c.x.dim(2), c.x.dim(3)});
    EXPECT_TRUE(Run1("Conv2DBackpropInput", {f, w}, in_attrs).BitEqual(dx));
  }
}

TEST(Conv2DTest, Errors) {
  Tensor x = Random({2, 8, 8, 3}, 1), f = Random({3, 3, 1, 4}, 2);
  AttrMap a{{"strides", V{1, 1, 1, 1}}, {"padding", std::string("SAME")}};
  EXPECT_INVALID(RunStatus("Conv2D", {x, f}, a), "Conv2D:", "'input' [2,8,8,3] has 3 channels",
                 "'filter' [3,3,1,4] expects 1");
  Tensor f3 = Random({3, 3, 3, 4}, 2);
  EXPECT_INVALID(
      RunStatus("Conv2D", {x, f3}, {{"strides", V{1, 0, 1, 1}}, {"padding", std::string("SAME")}}),
      "Conv2D:", "'strides' [1,0,1,1]", "positive");
  EXPECT_INVALID(
      RunStatus("Conv2D", {x, f3}, {{"strides", V{1, -2, 1, 1}}, {"padding", std::string("SAME")}}),
      "Conv2D:", "'strides' [1,-2,1,1]");
  EXPECT_INVALID(
      RunStatus("Conv2D", {x, f3}, {{"strides", V{2, 1, 1, 1}}, {"padding", std::string("SAME")}}),
      "Conv2D:", "batch and channel");
  EXPECT_INVALID(
      RunStatus("Conv2D", {x, f3}, {{"strides", V{1, 1, 1, 1}}, {"padding", std::string("FULL")}}),
      "Conv2D:", "'padding' is 'FULL'");
  EXPECT_INVALID(RunStatus("Conv2D", {Random({2, 8, 8}, 1), f3}, a),
                 "Conv2D:", "'input' must be rank 4", "[2,8,8]");
  EXPECT_INVALID(RunStatus("Conv2D", {x, Random<double>({3, 3, 3, 4}, 2)}, a),
                 "Conv2D:", "'input' has dtype float32", "'filter' has dtype float64");
  EXPECT_INVALID(RunStatus("Conv2D", {x, Random({3, 3, 3, 0}, 2)}, a), "Conv2D:", "empty",
                 "[3,3,3,0]");
  AttrMap v{{"strides", V{1, 1, 1, 1}}, {"padding", std::string("VALID")}};
  EXPECT_INVALID(RunStatus("Conv2D", {Random({1, 2, 2, 3}, 1), f3}, v),
                 "Conv2D:", "larger than the input");
  AttrMap bi = a;
  bi.Set("input_sizes", V{2, 8, 8, 3});
  EXPECT_INVALID(RunStatus("Conv2DBackpropInput", {f3, Random({2, 4, 8, 4}, 3)}, bi),
                 "Conv2DBackpropInput:", "'out_backprop' [2,4,8,4]", "[2,8,8,4]");
  AttrMap bf = a;
  bf.Set("filter_sizes", V{3, 3, 3, 4});
  EXPECT_INVALID(RunStatus("Conv2DBackpropFilter", {x, Random({2, 8, 8, 5}, 3)}, bf),
                 "Conv2DBackpropFilter:", "'out_backprop' [2,8,8,5]");
  EXPECT_INVALID(RunStatus("Conv2D", {x, f3},
                           {{"strides", V{1, 1, 1, 1}},
                            {"padding", std::string("SAME")},
                            {"data_format", std::string("NCHW")}}),
                 "Conv2D:", "NCHW");
  EXPECT_INVALID(RunStatus("Conv2D", {x, f3},
                           {{"strides", V{1, 1, 1, 1}},
                            {"padding", std::string("SAME")},
                            {"dilations", V{1, 0, 2, 1}}}),
                 "Conv2D:", "'dilations' [1,0,2,1]", "positive");
  // The dilated extent (3 - 1) * 4 + 1 = 9 exceeds the 8-pixel input.
  EXPECT_INVALID(RunStatus("Conv2D", {x, f3},
                           {{"strides", V{1, 1, 1, 1}},
                            {"padding", std::string("VALID")},
                            {"dilations", V{1, 4, 1, 1}}}),
                 "Conv2D:", "larger than the input");
}

TEST(Conv2DTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), three(3, "three");
  // LeNet conv1 (one input channel) and conv2 (6 -> 16: several filter-gradient row blocks).
  // A dilated 3x3 (im2col with dilation).
  for (auto [xs, fs, pad, dil] : {std::tuple{V{16, 28, 28, 1}, V{5, 5, 1, 6}, "SAME", 1},
                                  std::tuple{V{16, 14, 14, 6}, V{5, 5, 6, 16}, "VALID", 1},
                                  std::tuple{V{16, 14, 14, 8}, V{3, 3, 8, 16}, "SAME", 2},
                                  // 1x1 expansion: in place, transposed filter gradient, several
                                  // row blocks.
                                  std::tuple{V{48, 14, 14, 24}, V{1, 1, 24, 96}, "SAME", 1},
                                  // ResNet-20's 16-, 32- and 64-channel 3x3s (direct kernels,
                                  // padded images, several row blocks spanning images).
                                  std::tuple{V{6, 28, 28, 16}, V{3, 3, 16, 16}, "SAME", 1},
                                  std::tuple{V{12, 9, 9, 32}, V{3, 3, 32, 32}, "SAME", 1},
                                  std::tuple{V{40, 7, 7, 64}, V{3, 3, 64, 64}, "SAME", 1},
                                  // Unit-stride input gradients run as forward convolutions:
                                  // VALID (padded kh - 1 all round) and an even 2x2 SAME (padded
                                  // 0 on top, 1 below: the rotated filter's 1 on top, 0 below).
                                  std::tuple{V{5, 10, 9, 16}, V{3, 3, 16, 16}, "VALID", 1},
                                  std::tuple{V{5, 9, 9, 32}, V{2, 2, 32, 32}, "SAME", 1}}) {
    SCOPED_TRACE(TensorShape(fs).ToString());
    Tensor x = Random(TensorShape(xs), 1), f = Random(TensorShape(fs), 2);
    AttrMap a{{"strides", V{1, 1, 1, 1}}, {"padding", std::string(pad)}};
    if (dil != 1) a.Set("dilations", V{1, dil, dil, 1});
    Tensor y = (*RunOn(&one, "Conv2D", {x, f}, a))[0];
    EXPECT_TRUE(y.BitEqual((*RunOn(&three, "Conv2D", {x, f}, a))[0]));
    EXPECT_TRUE(y.BitEqual((*RunOn(nullptr, "Conv2D", {x, f}, a))[0]));
    Tensor dy = Random(y.shape(), 3);
    AttrMap bf = a, bi = a;
    bf.Set("filter_sizes", fs);
    bi.Set("input_sizes", xs);
    for (auto [op, in, attrs] : {std::tuple{"Conv2DBackpropFilter", std::vector{x, dy}, bf},
                                 std::tuple{"Conv2DBackpropInput", std::vector{f, dy}, bi}}) {
      Tensor g1 = (*RunOn(&one, op, in, attrs))[0];
      EXPECT_TRUE(g1.BitEqual((*RunOn(&three, op, in, attrs))[0])) << op;
      EXPECT_TRUE(g1.BitEqual((*RunOn(nullptr, op, in, attrs))[0])) << op;
    }
  }
}

// The GEMM path's bits, written out: the forward output is the fmaf chain over the patch in
// (kh, kw, c) order (padding taps as 0), the input gradient adds, in output-pixel order, each
// patch row's chain over the output channels (except the unit-stride input gradients that run as
// a forward convolution: GemmPathIsTheFmaChain), and (within one row block) the filter gradient
// is the chain over output pixels. Whatever the blocking (1x1 filters read the input
// in place, the input gradient groups images), the GEMM path (scalar, AVX2, AVX-512) or the
// thread count, the kernels must give exactly these bits.
struct ChainRef {
  std::vector<float> y, dx, dw;
};
// `block` > 0: the filter gradient as the GEMM path sums several row blocks: one chain per
// block of `block` output pixels, the block partials added in block order.
ChainRef FmaChainConv(const Tensor& x, const Tensor& f, const Tensor& dy, int64_t s, bool same,
                      int64_t block = 0) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const int64_t kh = f.dim(0), kw = f.dim(1), fo = f.dim(3);
  int64_t pt, pl;
  const int64_t oh = OutDim(h, kh, s, same, &pt), ow = OutDim(w, kw, s, same, &pl);
  const float *xp = x.data<float>(), *fp = f.data<float>(), *dyp = dy.data<float>();
  ChainRef r{std::vector<float>(static_cast<size_t>(n * oh * ow * fo)),
             std::vector<float>(static_cast<size_t>(x.num_elements()), 0.0f),
             std::vector<float>(static_cast<size_t>(f.num_elements()), 0.0f)};
  std::vector<float> total;
  auto fold = [&] {
    if (total.empty()) {
      total = r.dw;
    } else {
      for (size_t e = 0; e < total.size(); ++e) total[e] += r.dw[e];
    }
    std::fill(r.dw.begin(), r.dw.end(), 0.0f);
  };
  for (int64_t pix = 0; pix < n * oh * ow; ++pix) {
    if (block > 0 && pix > 0 && pix % block == 0) fold();
    const int64_t b = pix / (oh * ow), i = pix / ow % oh, j = pix % ow;
    auto in = [&](int64_t p, int64_t q, int64_t ci) -> float* {
      const int64_t ih = i * s - pt + p, iw = j * s - pl + q;
      if (ih < 0 || ih >= h || iw < 0 || iw >= w) return nullptr;
      return &r.dx[static_cast<size_t>(((b * h + ih) * w + iw) * c + ci)];
    };
    for (int64_t o = 0; o < fo; ++o) {
      float acc = 0.0f;
      for (int64_t k = 0; k < kh * kw * c; ++k) {
        float* d = in(k / (kw * c), k / c % kw, k % c);
        const float xv = d ? xp[d - r.dx.data()] : 0.0f;
        acc = std::fma(xv, fp[k * fo + o], acc);
      }
      r.y[static_cast<size_t>(pix * fo + o)] = acc;
    }
    for (int64_t k = 0; k < kh * kw * c; ++k) {
      float acc = 0.0f;
      for (int64_t o = 0; o < fo; ++o) acc = std::fma(dyp[pix * fo + o], fp[k * fo + o], acc);
      float* d = in(k / (kw * c), k / c % kw, k % c);
      if (d) *d += acc;
      // The filter gradient's chains run over the output pixels in order.
      const float xv = d ? xp[d - r.dx.data()] : 0.0f;
      for (int64_t o = 0; o < fo; ++o) {
        float& dwv = r.dw[static_cast<size_t>(k * fo + o)];
        dwv = std::fma(xv, dyp[pix * fo + o], dwv);
      }
    }
  }
  fold();
  r.dw = total;
  return r;
}

// The filter rotated by 180 degrees with its channel axes swapped: [kh, kw, f, c].
Tensor Rotated(const Tensor& f) {
  const int64_t kh = f.dim(0), kw = f.dim(1), c = f.dim(2), fo = f.dim(3);
  Tensor r = *Tensor::Allocate(DType::kFloat32, TensorShape({kh, kw, fo, c}));
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      for (int64_t ci = 0; ci < c; ++ci) {
        for (int64_t o = 0; o < fo; ++o) {
          r.data<float>()[((i * kw + j) * fo + o) * c + ci] =
              f.data<float>()[(((kh - 1 - i) * kw + (kw - 1 - j)) * c + ci) * fo + o];
        }
      }
    }
  }
  return r;
}

bool SameFloats(const Tensor& t, const std::vector<float>& want) {
  return t.num_elements() == static_cast<int64_t>(want.size()) &&
         std::memcmp(t.data<float>(), want.data(), want.size() * sizeof(float)) == 0;
}

TEST(Conv2DTest, GemmPathIsTheFmaChain) {
  using kernels::GemmPath;
  ThreadPool three(3, "three");
  std::vector<GemmPath> paths = {GemmPath::kScalar, GemmPath::kAvx2, GemmPath::kAuto};
  if (kernels::HaveGemmPackedAvx512()) paths.push_back(GemmPath::kAvx512);
  // 1x1 (in place), strided 1x1 (im2col), 3x3 over many small images (grouped input-gradient
  // GEMMs with edge tiles), a strided 7x7 stem and a wide 3x3 (unit-stride 3x3s with channel
  // counts off multiples of 8, which Winograd would take otherwise).
  for (auto [xs, fs, s, same] : {std::tuple{V{6, 9, 7, 40}, V{1, 1, 40, 72}, 1, true},
                                 std::tuple{V{3, 9, 8, 40}, V{1, 1, 40, 48}, 2, false},
                                 std::tuple{V{37, 5, 3, 20}, V{3, 3, 20, 36}, 1, true},
                                 std::tuple{V{2, 19, 17, 3}, V{7, 7, 3, 24}, 2, true},
                                 std::tuple{V{2, 6, 6, 68}, V{3, 3, 68, 20}, 1, true},
                                 // The direct kernels of conv2d_direct_small.cc: a 1 -> 16 stem
                                 // (forward), 12 -> 16, strided 16 -> 32 and 32 -> 32 (forward
                                 // and filter gradient), strided 40 -> 64 and a 7x7 stem
                                 // (forward: tiles across output rows; filter gradient in column
                                 // blocks). Unit-stride 3x3s of 16+ channels each way run
                                 // Winograd (conv2d_winograd_test.cc).
                                 std::tuple{V{2, 10, 10, 1}, V{3, 3, 1, 16}, 1, true},
                                 std::tuple{V{2, 10, 10, 12}, V{3, 3, 12, 16}, 1, true},
                                 std::tuple{V{2, 11, 10, 16}, V{3, 3, 16, 32}, 2, true},
                                 std::tuple{V{2, 9, 8, 32}, V{3, 3, 32, 32}, 2, false},
                                 std::tuple{V{2, 9, 9, 40}, V{3, 3, 40, 64}, 2, true},
                                 std::tuple{V{2, 12, 11, 3}, V{7, 7, 3, 64}, 2, true},
                                 // Unit-stride 16, 32 and 64 -> 12: input gradients as the
                                 // direct forward of the rotated filter (12 -> 16, 32, 64).
                                 std::tuple{V{2, 10, 10, 16}, V{3, 3, 16, 12}, 1, true},
                                 std::tuple{V{2, 9, 9, 32}, V{3, 3, 32, 12}, 1, true},
                                 std::tuple{V{2, 7, 7, 64}, V{3, 3, 64, 12}, 1, true},
                                 // Filters of 2^16+ elements over several row blocks: packed
                                 // once per call (a 3x3, a 1x1 in place, a strided 3x3).
                                 std::tuple{V{2, 10, 10, 256}, V{3, 3, 256, 30}, 1, true},
                                 std::tuple{V{1, 16, 16, 256}, V{1, 1, 256, 256}, 1, true},
                                 std::tuple{V{3, 13, 12, 96}, V{3, 3, 96, 80}, 2, true}}) {
    SCOPED_TRACE(TensorShape(fs).ToString());
    Tensor x = Random(TensorShape(xs), 5), f = Random(TensorShape(fs), 6);
    AttrMap a{{"strides", V{1, s, s, 1}}, {"padding", std::string(same ? "SAME" : "VALID")}};
    Tensor dy = Random(Run1("Conv2D", {x, f}, a).shape(), 7);
    ChainRef want = FmaChainConv(x, f, dy, s, same);
    // Unit strides into 16, 32 and 64 -> 12 (the direct forward kernels take the rotated
    // filter): dx is the forward chain of dy with the rotated filter over (kh, kw, f).
    const int64_t c = xs[3], fo = fs[3];
    const bool rotated_direct = (c == 16 || c == 32 || c == 64) && fo == 12;
    if (s == 1 && fs[0] * fs[1] > 1 && rotated_direct) {
      want.dx = FmaChainConv(dy, Rotated(f), Random(x.shape(), 8), 1, same).y;
    }
    AttrMap bi = a, bf = a;
    bi.Set("input_sizes", xs);
    bf.Set("filter_sizes", fs);
    for (GemmPath path : paths) {
      kernels::SetGemmPathForTesting(path);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
        EXPECT_TRUE(SameFloats((*RunOn(pool, "Conv2D", {x, f}, a))[0], want.y)) << int(path);
        // One input channel: the backprops are conv2d_direct.cc's, in orders of their own.
        if (xs[3] == 1) continue;
        EXPECT_TRUE(SameFloats((*RunOn(pool, "Conv2DBackpropInput", {f, dy}, bi))[0], want.dx))
            << int(path);
        // These fit one filter-gradient row block (>= 256 rows): one chain, no partial sums.
        EXPECT_TRUE(SameFloats((*RunOn(pool, "Conv2DBackpropFilter", {x, dy}, bf))[0], want.dw))
            << int(path);
      }
    }
    kernels::SetGemmPathForTesting(GemmPath::kAuto);
  }
}

// Several filter-gradient row blocks (256-1024 output pixels: 2^18 / K, conv2d.cc's
// FilterGradRows), summed in block order, whichever kernel runs: the GEMM path with block
// partials (3x3x72 -> 20), the direct kernels that take its blocks (strided 24 -> 32 and 24 -> 64
// on 7x7 images; unit-stride 3x3s of 16+ channels run Winograd, conv2d_winograd_test.cc) or
// their own (12 -> 16 and strided 16 -> 32 in 455-606-pixel blocks that start and end mid-row
// of a padded image: each block pads only the rows it reads) or, for products of 2^17
// elements or more, the GEMM path that adds each block's product into dw (a strided 3x3
// 128 -> 128, since unit strides run Winograd (conv2d_winograd_test.cc); a 1x1 1024 -> 128
// whose transposed input is packed; a 128 -> 1024 expansion computed transposed; a strided 1x1
// on im2col rows), on every GEMM path.
TEST(Conv2DTest, FilterGradientSumsRowBlocksInOrder) {
  using kernels::GemmPath;
  ThreadPool three(3, "three");
  std::vector<GemmPath> paths = {GemmPath::kAuto, GemmPath::kAvx2};
  for (auto [xs, fs, s, block] :
       {std::tuple{V{20, 6, 6, 72}, V{3, 3, 72, 20}, 1, int64_t{404}},
        std::tuple{V{48, 9, 9, 24}, V{3, 3, 24, 32}, 2, int64_t{1024}},
        std::tuple{V{80, 7, 7, 24}, V{3, 3, 24, 64}, 2, int64_t{1024}},
        std::tuple{V{4, 12, 12, 12}, V{3, 3, 12, 16}, 1, int64_t{606}},
        std::tuple{V{17, 11, 11, 16}, V{3, 3, 16, 32}, 2, int64_t{455}},
        std::tuple{V{6, 16, 16, 128}, V{3, 3, 128, 128}, 2, int64_t{256}},
        std::tuple{V{1, 16, 20, 1024}, V{1, 1, 1024, 128}, 1, int64_t{256}},
        std::tuple{V{1, 33, 33, 128}, V{1, 1, 128, 1024}, 1, int64_t{1024}},
        std::tuple{V{6, 20, 20, 512}, V{1, 1, 512, 256}, 2, int64_t{512}}}) {
    SCOPED_TRACE(TensorShape(fs).ToString());
    Tensor x = Random(TensorShape(xs), 5), f = Random(TensorShape(fs), 6);
    AttrMap a{{"strides", V{1, s, s, 1}}, {"padding", std::string("SAME")}};
    Tensor dy = Random(Run1("Conv2D", {x, f}, a).shape(), 7);
    const ChainRef want = FmaChainConv(x, f, dy, s, true, block);
    a.Set("filter_sizes", fs);
    for (GemmPath path : paths) {
      kernels::SetGemmPathForTesting(path);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
        EXPECT_TRUE(SameFloats((*RunOn(pool, "Conv2DBackpropFilter", {x, dy}, a))[0], want.dw))
            << int(path);
      }
    }
    kernels::SetGemmPathForTesting(GemmPath::kAuto);
  }
}

// A strided 1x1 filter's input gradient is written once (im2col.h: ScatterStrided on the
// stride grid, ZeroOffGrid elsewhere) instead of zero-filled and added into: the bits of the
// fill then Col2ImAdd, -0 included (0 + -0 is +0), and every pixel written (dx starts as NaN).
TEST(Conv2DTest, StridedPointwiseInputGradientWritesEveryPixel) {
  for (auto [h, w, sh, sw] : {std::tuple{9, 8, 2, 2}, std::tuple{7, 10, 2, 3},
                              std::tuple{6, 6, 3, 1}, std::tuple{5, 9, 1, 2}}) {
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " / " + std::to_string(sh) + "x" +
                 std::to_string(sw));
    kernels::ConvGeo g{};
    g.n = 2, g.h = h, g.w = w, g.c = 5, g.kh = 1, g.kw = 1, g.f = 3;
    g.sh = sh, g.sw = sw, g.pt = 0, g.pl = 0;
    g.oh = (h + sh - 1) / sh, g.ow = (w + sw - 1) / sw;  // SAME and VALID agree for 1x1
    ASSERT_TRUE(kernels::StridedPointwise(g));
    const int64_t rows = g.rows(), size = g.n * h * w * g.c;
    std::vector<float> col(static_cast<size_t>(rows * g.c));
    for (size_t i = 0; i < col.size(); ++i) col[i] = i % 7 == 0 ? -0.0f : 0.25f * float(i) - 3.f;
    std::vector<float> want(static_cast<size_t>(size), 0.f);
    kernels::Col2ImAdd(g, col.data(), 0, rows, want.data());
    std::vector<float> got(want.size(), std::nanf(""));
    kernels::ZeroOffGrid(g, 0, g.n, got.data());
    // In two row blocks, the second starting mid-image.
    const int64_t split = rows / 2 + 1;
    kernels::ScatterStrided(g, col.data(), 0, split, got.data());
    kernels::ScatterStrided(g, col.data() + split * g.c, split, rows, got.data());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace troupe
