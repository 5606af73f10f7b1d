// Softmax/LogSoftmax, the fused cross-entropy losses (values and their backprop output against
// numerical gradients of the loss), BiasAdd/BiasAddGrad, and errors.
#include <algorithm>
#include <cmath>
#include <memory>

#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT

// SoftmaxGrad(y, dy) has the bits of the chain it replaced in Softmax's gradient,
// (dy - Sum(dy * y, -1, keep_dims)) * y, for any thread count: at the transformer_lm's attention
// shape, short rows, and rows longer than one reduction chunk.
TEST(SoftmaxTest, SoftmaxGradEqualsUnfusedChainBits) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n = 1; n <= 3; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "sm"));
  uint32_t seed = 7;
  for (TensorShape shape :
       {TensorShape{12, 4, 64, 64}, TensorShape{3, 17}, TensorShape{2, 20000}}) {
    Tensor y = Run1("Softmax", {Random(shape, seed++, -4, 4)});
    Tensor dy = Random(shape, seed++);
    AttrMap last;
    last.Set("axis", int64_t{-1});
    last.Set("keep_dims", true);
    Tensor sum = Run1("Sum", {Run1("Mul", {dy, y})}, last);
    const std::vector<float> want = Values<float>(Run1("Mul", {Run1("Sub", {dy, sum}), y}));
    EXPECT_EQ(Values<float>(Run1("SoftmaxGrad", {y, dy})), want) << shape.ToString();
    for (const auto& pool : pools) {
      auto got = RunOn(pool.get(), "SoftmaxGrad", {y, dy});
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(Values<float>((*got)[0]), want) << shape.ToString();
    }
  }
  EXPECT_INVALID(RunStatus("SoftmaxGrad", {Random({2, 3}, 1), Random({2, 4}, 2)}), "SoftmaxGrad:");
}

TEST(SoftmaxTest, MatchesFormula) {
  Tensor x = Random({4, 10}, 1, -5, 5);
  Tensor y = Run1("Softmax", {x});
  Tensor ly = Run1("LogSoftmax", {x});
  for (int r = 0; r < 4; ++r) {
    double sum = 0;
    for (int c = 0; c < 10; ++c) sum += std::exp(double(x.data<float>()[r * 10 + c]));
    for (int c = 0; c < 10; ++c) {
      double want = std::exp(double(x.data<float>()[r * 10 + c])) / sum;
      EXPECT_NEAR(y.data<float>()[r * 10 + c], want, 1e-6 * (1 + want));
      EXPECT_NEAR(ly.data<float>()[r * 10 + c], std::log(want), 2e-6);
    }
  }
  // Large logits do not overflow (max subtraction).
  Tensor big = Make<float>({1000, 1000}, {1, 2});
  EXPECT_EQ(Values<float>(Run1("Softmax", {big})), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_INVALID(RunStatus("Softmax", {Tensor::Scalar(1.0f)}), "Softmax:", "'logits'", "rank >= 1");
}

// float Softmax (kernels/softmax_rows.h): within 1e-6 relative of a float64 reference at row
// lengths around the 8-lane body (masked -1e9 logits give exact zeros), and the same bits for
// any thread count at the transformer_lm's attention shape.
TEST(SoftmaxTest, FloatRowsMatchReferenceAndKeepBits) {
  for (int64_t c : {1, 7, 8, 9, 64, 67, 256}) {
    Tensor x = Random({5, c}, static_cast<uint32_t>(c), -30, 30);
    if (c > 2) x.data<float>()[c - 1] = -1e9f;
    const std::vector<float> xv = Values<float>(x);
    const std::vector<float> y = Values<float>(Run1("Softmax", {x}));
    for (int64_t r = 0; r < 5; ++r) {
      double m = -1e300, sum = 0;
      for (int64_t j = 0; j < c; ++j) m = std::max<double>(m, xv[r * c + j]);
      // The shift x - max rounds to float first, as in TF.
      const auto e = [&](int64_t j) { return std::exp(double(xv[r * c + j] - float(m))); };
      for (int64_t j = 0; j < c; ++j) sum += e(j);
      for (int64_t j = 0; j < c; ++j) {
        const double want = e(j) / sum;
        EXPECT_NEAR(y[r * c + j], want, 1e-6 * want + 1e-30) << c << " " << r << " " << j;
      }
    }
    if (c > 2) {
      EXPECT_EQ(y[c - 1], 0.0f);
    }
  }
  const Tensor x = Random({12, 4, 64, 64}, 5, -10, 10);
  const Tensor y0 = Run1("Softmax", {x});
  for (int n = 1; n <= 3; ++n) {
    ThreadPool pool(n, "sm");
    auto got = RunOn(&pool, "Softmax", {x});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameBits((*got)[0], y0)) << n;
  }
}

TEST(SoftmaxTest, GradientExpressionMatchesNumerical) {
  // TF has no Softmax gradient op: dx = (dy - sum(dy * y, -1, keep_dims)) * y.
  Tensor x = Random<double>({3, 5}, 2), w = Random<double>({3, 5}, 3);
  Tensor y = Run1("Softmax", {x});
  Tensor s =
      Run1("Sum", {Run1("Mul", {w, y})}, {{"axis", std::vector<int64_t>{-1}}, {"keep_dims", true}});
  Tensor dx = Run1("Mul", {Run1("Sub", {w, s}), y});
  CheckGradient([&](const Tensor& xx) { return Run1("Softmax", {xx}); }, x, w, dx);
}

TEST(XentTest, SparseLossAndBackprop) {
  Tensor logits = Random<double>({6, 10}, 4, -3, 3);
  for (DType label_type : {DType::kInt32, DType::kInt64}) {
    std::vector<int64_t> lab = {0, 9, 3, 3, 7, 1};
    Tensor labels = *Tensor::Allocate(label_type, {6});
    for (int i = 0; i < 6; ++i) {
      if (label_type == DType::kInt32)
        labels.data<int32_t>()[i] = static_cast<int32_t>(lab[i]);
      else
        labels.data<int64_t>()[i] = lab[i];
    }
    auto out = RunN("SparseSoftmaxCrossEntropyWithLogits", {logits, labels});
    ASSERT_EQ(out.size(), 2u);
    ASSERT_EQ(out[0].shape(), TensorShape({6}));
    ASSERT_EQ(out[1].shape(), TensorShape({6, 10}));
    for (int r = 0; r < 6; ++r) {
      double sum = 0;
      for (int c = 0; c < 10; ++c) sum += std::exp(logits.data<double>()[r * 10 + c]);
      EXPECT_NEAR(out[0].data<double>()[r], std::log(sum) - logits.data<double>()[r * 10 + lab[r]],
                  1e-12);
    }
    // backprop is d(sum of losses)/d logits.
    Tensor ones = Run1("OnesLike", {out[0]});
    CheckGradient(
        [&](const Tensor& x) {
          return RunN("SparseSoftmaxCrossEntropyWithLogits", {x, labels})[0];
        },
        logits, ones, out[1]);
  }
}

TEST(XentTest, DenseLossAndBackprop) {
  Tensor logits = Random<double>({4, 5}, 5, -3, 3);
  Tensor labels = Run1("Softmax", {Random<double>({4, 5}, 6, -2, 2)});
  auto out = RunN("SoftmaxCrossEntropyWithLogits", {logits, labels});
  Tensor ones = Run1("OnesLike", {out[0]});
  CheckGradient(
      [&](const Tensor& x) {
        return RunN("SoftmaxCrossEntropyWithLogits", {x, labels})[0];
      },
      logits, ones, out[1]);
}

TEST(XentTest, Errors) {
  Tensor logits = Random({3, 4}, 1);
  EXPECT_INVALID(RunStatus("SparseSoftmaxCrossEntropyWithLogits",
                           {logits, Tensor::FromVector<int32_t>({0, 4, 1})}),
                 "SparseSoftmaxCrossEntropyWithLogits:", "label value of 4",
                 "valid range of [0, 4)", "[3,4]");
  EXPECT_INVALID(RunStatus("SparseSoftmaxCrossEntropyWithLogits",
                           {logits, Tensor::FromVector<int32_t>({0, -1, 1})}),
                 "label value of -1");
  EXPECT_INVALID(RunStatus("SparseSoftmaxCrossEntropyWithLogits",
                           {logits, Tensor::FromVector<int32_t>({0, 1})}),
                 "batch sizes differ", "'features' [3,4]", "'labels' [2]");
  EXPECT_INVALID(RunStatus("SparseSoftmaxCrossEntropyWithLogits",
                           {logits, Tensor::FromVector<float>({0, 1, 2})}),
                 "'labels' has dtype float32");
  EXPECT_INVALID(RunStatus("SparseSoftmaxCrossEntropyWithLogits",
                           {Random({3, 0}, 1), Tensor::FromVector<int32_t>({0, 1, 2})}),
                 "no classes", "[3,0]");
  EXPECT_INVALID(RunStatus("SoftmaxCrossEntropyWithLogits", {logits, Random({3, 5}, 2)}),
                 "SoftmaxCrossEntropyWithLogits:", "'features' has shape [3,4]",
                 "'labels' has shape [3,5]");
}

TEST(BiasTest, BiasAddAndGrad) {
  Tensor v = Random<double>({2, 3, 3, 4}, 1), b = Random<double>({4}, 2);
  Tensor y = Run1("BiasAdd", {v, b});
  for (int64_t i = 0; i < v.num_elements(); ++i) {
    EXPECT_EQ(y.data<double>()[i], v.data<double>()[i] + b.data<double>()[i % 4]);
  }
  Tensor w = Random<double>(v.shape(), 3);
  Tensor db = Run1("BiasAddGrad", {w});
  ASSERT_EQ(db.shape(), TensorShape({4}));
  CheckGradient([&](const Tensor& bb) { return Run1("BiasAdd", {v, bb}); }, b, w, db);
  EXPECT_INVALID(RunStatus("BiasAdd", {v, Random<double>({3}, 2)}),
                 "BiasAdd:", "channel counts differ", "'value' [2,3,3,4]", "'bias' [3]");
  EXPECT_INVALID(RunStatus("BiasAdd", {v, Random({4}, 2)}), "BiasAdd:", "'bias' has dtype float32");
  EXPECT_INVALID(RunStatus("BiasAddGrad", {Random({4}, 2)}), "BiasAddGrad:", "rank >= 2");
}

}  // namespace
}  // namespace troupe
