// The one-input-channel filter gradient (kernels/conv2d_direct.cc) against the sums it promises:
// per image, tap and output element (ow, f), the fmaf chain over the output rows whose input row
// is inside the image (padding columns as 0); each tap's column sums in column order; the images'
// partials added in image order. Its rows are read in place where ow * f is a whole number of
// 64-byte vectors (ResNet-20's 1 -> 16 stem), else from a padded copy (LeNet's 1 -> 6).
#include <cmath>
#include <cstring>

#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

// SAME padding, strides (sh, 1).
std::vector<float> C1FilterGradChain(const Tensor& x, const Tensor& dy, int64_t kh, int64_t kw,
                                     int64_t sh) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2);
  const int64_t oh = dy.dim(1), ow = dy.dim(2), f = dy.dim(3);
  const int64_t pt = std::max<int64_t>(0, (oh - 1) * sh + kh - h) / 2;
  const int64_t pl = std::max<int64_t>(0, ow - 1 + kw - w) / 2;
  const float *xp = x.data<float>(), *dyp = dy.data<float>();
  std::vector<float> total(static_cast<size_t>(kh * kw * f), 0.0f);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < kh; ++p) {
      for (int64_t q = 0; q < kw; ++q) {
        for (int64_t o = 0; o < f; ++o) {
          float cols = 0.0f;
          for (int64_t j = 0; j < ow; ++j) {
            float acc = 0.0f;
            for (int64_t i = 0; i < oh; ++i) {
              const int64_t ih = i * sh - pt + p, iw = j - pl + q;
              if (ih < 0 || ih >= h) continue;
              const float xv = iw < 0 || iw >= w ? 0.0f : xp[(b * h + ih) * w + iw];
              acc = std::fma(xv, dyp[((b * oh + i) * ow + j) * f + o], acc);
            }
            cols = j == 0 ? acc : cols + acc;
          }
          float& t = total[static_cast<size_t>((p * kw + q) * f + o)];
          t = b == 0 ? cols : t + cols;
        }
      }
    }
  }
  return total;
}

TEST(Conv2DDirectTest, SingleChannelFilterGradientIsItsChain) {
  ThreadPool three(3, "three");
  for (auto [xs, fs, sh] : {std::tuple{V{3, 10, 9, 1}, V{3, 3, 1, 16}, int64_t{1}},
                            std::tuple{V{2, 11, 8, 1}, V{3, 3, 1, 16}, int64_t{2}},
                            std::tuple{V{3, 7, 6, 1}, V{3, 3, 1, 6}, int64_t{1}},
                            std::tuple{V{2, 9, 9, 1}, V{5, 5, 1, 6}, int64_t{2}}}) {
    SCOPED_TRACE(TensorShape(fs).ToString());
    Tensor x = Random(TensorShape(xs), 11), f = Random(TensorShape(fs), 12);
    AttrMap a{{"strides", V{1, sh, 1, 1}}, {"padding", std::string("SAME")}};
    Tensor dy = Random(Run1("Conv2D", {x, f}, a).shape(), 13);
    const std::vector<float> want = C1FilterGradChain(x, dy, fs[0], fs[1], sh);
    a.Set("filter_sizes", fs);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
      Tensor dw = (*RunOn(pool, "Conv2DBackpropFilter", {x, dy}, a))[0];
      ASSERT_EQ(dw.num_elements(), static_cast<int64_t>(want.size()));
      EXPECT_EQ(std::memcmp(dw.data<float>(), want.data(), want.size() * sizeof(float)), 0);
    }
  }
}

}  // namespace
}  // namespace troupe
