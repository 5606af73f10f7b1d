// Augment: resize against a direct half-pixel bilinear formula, crop windows equal to the
// zero-padded source, exact flips, and determinism of the (seed, replica, step, row) draws.
#include "input/augment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace troupe::input {
namespace {

Tensor RandomBatch(int64_t n, int64_t h, int64_t w, int64_t c, uint32_t seed) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape{n, h, w, c});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

float At(const Tensor& t, int64_t b, int64_t y, int64_t x, int64_t k) {
  return t.data<float>()[((b * t.dim(1) + y) * t.dim(2) + x) * t.dim(3) + k];
}

// Bilinear sample at half-pixel centres, in double, clamping like TF.
double Reference(const Tensor& t, int64_t b, double sy, double sx, int64_t k) {
  auto axis = [](double s, int64_t n, int64_t* lo, int64_t* hi) {
    const double f = std::floor(s);
    *lo = std::max<int64_t>(static_cast<int64_t>(f), 0);
    *hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(s)), n - 1);
    return s - f;
  };
  int64_t y0, y1, x0, x1;
  const double ly = axis(sy, t.dim(1), &y0, &y1), lx = axis(sx, t.dim(2), &x0, &x1);
  const double top = At(t, b, y0, x0, k) + (At(t, b, y0, x1, k) - At(t, b, y0, x0, k)) * lx;
  const double bot = At(t, b, y1, x0, k) + (At(t, b, y1, x1, k) - At(t, b, y1, x0, k)) * lx;
  return top + (bot - top) * ly;
}

TEST(ResizeBilinearTest, MatchesHalfPixelFormula) {
  const Tensor in = RandomBatch(2, 7, 10, 3, 1);
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{14, 20}, {3, 4}, {7, 10}, {1, 1}, {9, 5}}) {
    auto out = ResizeBilinear(in, oh, ow);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->shape(), (TensorShape{2, oh, ow, 3}));
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          for (int64_t k = 0; k < 3; ++k) {
            const double sy = (y + 0.5) * 7.0 / oh - 0.5, sx = (x + 0.5) * 10.0 / ow - 0.5;
            EXPECT_NEAR(At(*out, b, y, x, k), Reference(in, b, sy, sx, k), 2e-6);
          }
        }
      }
    }
  }
  // Same size is the identity.
  EXPECT_TRUE(ResizeBilinear(in, 7, 10)->BitEqual(in));
}

TEST(ResizeBilinearTest, ConstantStaysConstant) {
  Tensor in = *Tensor::Allocate(DType::kFloat32, TensorShape{1, 5, 6, 2});
  for (float& v : in.flat<float>()) v = 0.375f;
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{13, 3}, {2, 17}, {5, 6}}) {
    auto out = ResizeBilinear(in, oh, ow);
    ASSERT_TRUE(out.ok());
    for (float v : out->flat<float>()) EXPECT_EQ(v, 0.375f);
  }
}

TEST(AugmentTest, CropIsThePaddedWindowWithOffsetsInRange) {
  const int64_t n = 64, h = 6, w = 5, c = 2, p = 3;
  const Tensor in = RandomBatch(n, h, w, c, 2);
  const AugmentKey key{11, 0, 5};
  auto out = RandomCropWithPadding(in, p, key);
  ASSERT_TRUE(out.ok()) << out.status();
  std::set<int64_t> tops, lefts;
  for (int64_t b = 0; b < n; ++b) {
    const RowDraws d = DrawForRow(key, b, p);
    ASSERT_GE(d.crop_top, 0);
    ASSERT_LE(d.crop_top, 2 * p);
    ASSERT_GE(d.crop_left, 0);
    ASSERT_LE(d.crop_left, 2 * p);
    tops.insert(d.crop_top);
    lefts.insert(d.crop_left);
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          const int64_t sy = y + d.crop_top - p, sx = x + d.crop_left - p;
          const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
          EXPECT_EQ(At(*out, b, y, x, k), inside ? At(in, b, sy, sx, k) : 0.0f);
        }
      }
    }
  }
  EXPECT_EQ(tops.size(), 2 * p + 1u);  // 64 rows hit all 7 offsets
  EXPECT_EQ(lefts.size(), 2 * p + 1u);
  // padding 0 is a copy.
  EXPECT_TRUE(RandomCropWithPadding(in, 0, key)->BitEqual(in));
}

TEST(AugmentTest, FlipIsAnExactMirrorForAboutHalfTheRows) {
  const int64_t n = 200, h = 3, w = 4, c = 3;
  const Tensor in = RandomBatch(n, h, w, c, 3);
  const AugmentKey key{5, 1, 9};
  auto out = RandomFlipLeftRight(in, key);
  ASSERT_TRUE(out.ok());
  int flipped = 0;
  for (int64_t b = 0; b < n; ++b) {
    const bool f = DrawForRow(key, b, 0).flip;
    flipped += f;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          EXPECT_EQ(At(*out, b, y, x, k), At(in, b, y, f ? w - 1 - x : x, k));
        }
      }
    }
  }
  EXPECT_GT(flipped, 70);
  EXPECT_LT(flipped, 130);
}

TEST(AugmentTest, SameKeySameBitsDifferentKeyDifferentDraws) {
  const Tensor in = RandomBatch(32, 8, 8, 3, 4);
  AugmentOptions o;
  o.resize_height = 10;
  o.resize_width = 12;
  o.crop_padding = 2;
  o.flip_left_right = true;
  const AugmentKey key{42, 3, 100};
  auto a = Augment(in, o, key);
  auto b = Augment(in, o, key);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  EXPECT_EQ(a->shape(), (TensorShape{32, 10, 12, 3}));
  EXPECT_TRUE(a->BitEqual(*b));
  // Draws for one row depend only on (seed, replica, step, row).
  auto draws = [](const AugmentKey& k) {
    std::vector<int64_t> v;
    for (int64_t r = 0; r < 32; ++r) {
      const RowDraws d = DrawForRow(k, r, 2);
      v.push_back(d.crop_top * 100 + d.crop_left * 10 + d.flip);
    }
    return v;
  };
  const auto base = draws(key);
  EXPECT_NE(draws({42, 3, 101}), base);  // next step
  EXPECT_NE(draws({42, 4, 100}), base);  // another replica
  EXPECT_NE(draws({43, 3, 100}), base);  // another seed
  EXPECT_FALSE(Augment(in, o, {42, 3, 101})->BitEqual(*a));
  // Pinned values: the derivation in augment.h must not change silently (resume relies on it).
  const RowDraws d0 = DrawForRow({0, 0, 0}, 0, 4);
  const RowDraws d7 = DrawForRow({1234, 2, 77}, 7, 4);
  EXPECT_EQ((std::vector<int64_t>{d0.crop_top, d0.crop_left, d0.flip, d7.crop_top, d7.crop_left,
                                  d7.flip}),
            (std::vector<int64_t>{7, 2, 0, 4, 2, 1}));
}

TEST(AugmentTest, ResultDoesNotDependOnThreadsOrBatchSplit) {
  // Rows are independent: augmenting a batch equals augmenting it in one go when the row index
  // is the same, and large batches (split across the pool) equal a row-by-row reference.
  const Tensor in = RandomBatch(300, 16, 16, 3, 5);
  const AugmentKey key{7, 0, 1};
  auto all = RandomCropWithPadding(in, 4, key);
  ASSERT_TRUE(all.ok());
  for (int64_t b : {0, 1, 150, 299}) {
    const RowDraws d = DrawForRow(key, b, 4);
    EXPECT_EQ(At(*all, b, 8, 8, 1), At(in, b, 8 + d.crop_top - 4, 8 + d.crop_left - 4, 1));
  }
  EXPECT_TRUE(RandomCropWithPadding(in, 4, key)->BitEqual(*all));
}

TEST(AugmentTest, ValidatesInputsAndOptions) {
  const Tensor in = RandomBatch(2, 4, 4, 1, 6);
  AugmentOptions o;
  o.resize_height = 3;  // width missing
  auto r = Augment(in, o, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("resize_width"), std::string::npos);
  o = {};
  o.crop_padding = -1;
  r = Augment(in, o, {});
  EXPECT_NE(r.status().message().find("crop_padding"), std::string::npos);
  Tensor ints = *Tensor::Allocate(DType::kInt32, TensorShape{2, 4, 4, 1});
  EXPECT_EQ(Augment(ints, {}, {}).status().code(), StatusCode::kInvalidArgument);
  Tensor rank3 = *Tensor::Allocate(DType::kFloat32, TensorShape{4, 4, 1});
  EXPECT_NE(Augment(rank3, {}, {}).status().message().find("rank-4"), std::string::npos);
  EXPECT_FALSE(ResizeBilinear(in, 0, 3).ok());
  // No options: a copy, not an alias.
  auto copy = Augment(in, {}, {});
  ASSERT_TRUE(copy.ok());
  EXPECT_TRUE(copy->BitEqual(in));
  EXPECT_FALSE(copy->SharesBufferWith(in));
}

}  // namespace
}  // namespace troupe::input
