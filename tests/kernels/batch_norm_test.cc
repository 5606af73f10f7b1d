// FusedBatchNormTraining / FusedBatchNormTrainingGrad (kernels/batch_norm.cc), their Relu,
// Bias and AddRelu variants and AddRelu (kernels/add_relu.cc): the forward op
// equals the unfused Keras graph (Mean, SquaredDifference, Rsqrt, Mul, Sub, Add) bit for bit,
// the backward op matches a float64 reference of the same graph's gradient, and both give the
// same bits for any thread count. (They have no AVX-512 variant; the interop script
// tests/interop/norm_softmax_tf_test.py compares TROUPE_CPU_AVX512=0 runs with default ones.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/op_registry.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using testing_util::Random;
using testing_util::Run1;
using testing_util::RunOn;
using testing_util::RunV;
using testing_util::SameBits;

constexpr double kEps = 1e-3;

AttrMap EpsAttrs() {
  AttrMap a;
  a.Set("epsilon", kEps);
  return a;
}

std::vector<int64_t> AllButLast(const Tensor& x) {
  std::vector<int64_t> axes;
  for (int d = 0; d + 1 < x.rank(); ++d) axes.push_back(d);
  return axes;
}

// The unfused graph of nn::BatchNormalization (training, last axis): {y, mean, variance}.
std::vector<Tensor> Unfused(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  AttrMap mean_attrs;
  mean_attrs.Set("axis", AllButLast(x));
  Tensor mean = Run1("Mean", {x}, mean_attrs);
  Tensor var = Run1("Mean", {Run1("SquaredDifference", {x, mean})}, mean_attrs);
  Tensor eps = *Tensor::FromVector<float>({static_cast<float>(kEps)}, TensorShape({}));
  Tensor inv = Run1("Mul", {Run1("Rsqrt", {Run1("Add", {var, eps})}), gamma});
  Tensor shift = Run1("Sub", {beta, Run1("Mul", {mean, inv})});
  return {Run1("Add", {Run1("Mul", {x, inv}), shift}), mean, var};
}

struct Inputs {
  Tensor x, gamma, beta, dy;
};
Inputs MakeInputs(const TensorShape& shape, uint32_t seed) {
  const int64_t c = shape.dim(shape.rank() - 1);
  // An offset mean makes the two-pass variance matter.
  return {Random(shape, seed, 1.0, 3.0), Random(TensorShape({c}), seed + 1, 0.5, 1.5),
          Random(TensorShape({c}), seed + 2), Random(shape, seed + 3)};
}

const std::vector<TensorShape>& Shapes() {
  static const std::vector<TensorShape> shapes = {
      {128, 32, 32, 16}, {128, 8, 8, 64}, {4, 3, 3, 5}, {3, 7}, {2, 5, 5, 100}, {9, 4100}, {1, 1}};
  return shapes;
}

TEST(FusedBatchNormTest, ForwardEqualsUnfusedGraphBits) {
  uint32_t seed = 1;
  for (const TensorShape& shape : Shapes()) {
    Inputs in = MakeInputs(shape, seed += 4);
    Result<std::vector<Tensor>> fused =
        RunV("FusedBatchNormTraining", {in.x, in.gamma, in.beta}, EpsAttrs());
    ASSERT_TRUE(fused.ok()) << fused.status();
    std::vector<Tensor> ref = Unfused(in.x, in.gamma, in.beta);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(SameBits((*fused)[static_cast<size_t>(i)], ref[static_cast<size_t>(i)]))
          << shape.ToString() << " output " << i;
    }
  }
}

// float64 reference of d(sum(y * dy)) for the Keras graph: with xc = x - mean,
// rstd = 1 / sqrt(var + eps): dx = gamma * rstd * (dy - mean(dy) - xc * rstd^2 * mean(dy*xc)).
TEST(FusedBatchNormTest, BackwardMatchesFloat64Reference) {
  uint32_t seed = 100;
  for (const TensorShape& shape : Shapes()) {
    Inputs in = MakeInputs(shape, seed += 4);
    std::vector<Tensor> fwd = Unfused(in.x, in.gamma, in.beta);
    Result<std::vector<Tensor>> g =
        RunV("FusedBatchNormTrainingGrad", {in.dy, in.x, in.gamma, fwd[1], fwd[2]}, EpsAttrs());
    ASSERT_TRUE(g.ok()) << g.status();
    const int64_t c = in.gamma.num_elements(), rows = in.x.num_elements() / c;
    const float* x = in.x.data<float>();
    const float* dy = in.dy.data<float>();
    for (int64_t j = 0; j < c; ++j) {
      double mean = 0, var = 0, sdy = 0, sdyxc = 0;
      for (int64_t r = 0; r < rows; ++r) mean += x[r * c + j];
      mean /= static_cast<double>(rows);
      for (int64_t r = 0; r < rows; ++r) var += std::pow(x[r * c + j] - mean, 2);
      var /= static_cast<double>(rows);
      for (int64_t r = 0; r < rows; ++r) {
        sdy += dy[r * c + j];
        sdyxc += dy[r * c + j] * (x[r * c + j] - mean);
      }
      const double rstd = 1 / std::sqrt(var + static_cast<double>(static_cast<float>(kEps)));
      const double gm = in.gamma.data<float>()[j];
      EXPECT_NEAR((*g)[2].data<float>()[j], sdy, 1e-5 * (std::abs(sdy) + rows)) << j;
      EXPECT_NEAR((*g)[1].data<float>()[j], sdyxc * rstd, 1e-5 * (std::abs(sdyxc) + rows) * rstd);
      for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 97)) {
        const double xc = x[r * c + j] - mean;
        const double want =
            gm * rstd * (dy[r * c + j] - sdy / rows - xc * rstd * rstd * sdyxc / rows);
        ASSERT_NEAR((*g)[0].data<float>()[r * c + j], want, 2e-5 * (std::abs(want) + gm * rstd))
            << shape.ToString() << " row " << r << " channel " << j;
      }
    }
  }
}

TEST(FusedBatchNormTest, SameBitsForAnyThreadCount) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n = 1; n <= 3; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "bn"));
  uint32_t seed = 200;
  for (const TensorShape& shape : Shapes()) {
    Inputs in = MakeInputs(shape, seed += 4);
    Result<std::vector<Tensor>> f0 =
        RunOn(nullptr, "FusedBatchNormTraining", {in.x, in.gamma, in.beta}, EpsAttrs());
    ASSERT_TRUE(f0.ok()) << f0.status();
    const std::vector<Tensor> bwd_in = {in.dy, in.x, in.gamma, (*f0)[1], (*f0)[2]};
    Result<std::vector<Tensor>> b0 =
        RunOn(nullptr, "FusedBatchNormTrainingGrad", bwd_in, EpsAttrs());
    ASSERT_TRUE(b0.ok()) << b0.status();
    for (const auto& pool : pools) {
      Result<std::vector<Tensor>> f =
          RunOn(pool.get(), "FusedBatchNormTraining", {in.x, in.gamma, in.beta}, EpsAttrs());
      Result<std::vector<Tensor>> b =
          RunOn(pool.get(), "FusedBatchNormTrainingGrad", bwd_in, EpsAttrs());
      ASSERT_TRUE(f.ok() && b.ok());
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(SameBits((*f)[i], (*f0)[i])) << shape.ToString() << " forward " << i;
        EXPECT_TRUE(SameBits((*b)[i], (*b0)[i])) << shape.ToString() << " backward " << i;
      }
    }
  }
}

// The Relu variants against Relu / ReluGrad around the plain ops: same bits, any thread count.
// dy has exact zeros and x a mean offset, so masked and unmasked sums differ.
TEST(FusedBatchNormTest, ReluVariantsEqualSeparateOpsBits) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  pools.push_back(nullptr);
  for (int n = 1; n <= 4; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "bn"));
  uint32_t seed = 300;
  for (const TensorShape& shape : Shapes()) {
    Inputs in = MakeInputs(shape, seed += 4);
    in.x = Random(shape, seed, -1.0, 1.5);
    for (int64_t i = 0; i < in.dy.num_elements(); i += 7) in.dy.data<float>()[i] = 0.f;
    // Channel 0 constant with beta 0: y = a + (0 - a) = +0 there, the sign test's edge (the
    // gradients recompute y's sign from x).
    const int64_t c = in.gamma.num_elements();
    for (int64_t i = 0; i < in.x.num_elements(); i += c) in.x.data<float>()[i] = 0.75f;
    in.beta.data<float>()[0] = 0.f;
    std::vector<Tensor> plain =
        *RunV("FusedBatchNormTraining", {in.x, in.gamma, in.beta}, EpsAttrs());
    const Tensor y = Run1("Relu", {plain[0]});
    const Tensor dy = Run1("ReluGrad", {in.dy, y});
    std::vector<Tensor> want_grad =
        *RunV("FusedBatchNormTrainingGrad", {dy, in.x, in.gamma, plain[1], plain[2]}, EpsAttrs());
    for (const auto& pool : pools) {
      Result<std::vector<Tensor>> f =
          RunOn(pool.get(), "FusedBatchNormReluTraining", {in.x, in.gamma, in.beta}, EpsAttrs());
      ASSERT_TRUE(f.ok()) << f.status();
      EXPECT_TRUE(SameBits((*f)[0], y)) << shape.ToString();
      EXPECT_TRUE(SameBits((*f)[1], plain[1]) && SameBits((*f)[2], plain[2])) << shape.ToString();
      Result<std::vector<Tensor>> g =
          RunOn(pool.get(), "FusedBatchNormReluTrainingGrad",
                {in.dy, in.x, in.gamma, plain[1], plain[2], in.beta}, EpsAttrs());
      ASSERT_TRUE(g.ok()) << g.status();
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(SameBits((*g)[i], want_grad[i])) << shape.ToString() << " output " << i;
      }
    }
  }
}

// The Bias variants against AddV2(x, bias) before the plain / Relu ops and SumToShapeOf(dx) for
// dbias (the graph of a Conv2D's bias add before BatchNormalization): same bits, any threads.
TEST(FusedBatchNormTest, BiasVariantsEqualSeparateOpsBits) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  pools.push_back(nullptr);
  for (int n = 1; n <= 4; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "bn"));
  uint32_t seed = 400;
  for (const TensorShape& shape : Shapes()) {
    Inputs in = MakeInputs(shape, seed += 4);
    const int64_t c = in.gamma.num_elements();
    const Tensor bias = Random(TensorShape({c}), seed, -2.0, 2.0);
    std::vector<int64_t> like_dims(static_cast<size_t>(shape.rank()), 1);
    like_dims.back() = c;
    const Tensor bias_like = Random(TensorShape(like_dims), seed);  // SumToShapeOf's target
    const Tensor xb = Run1("AddV2", {in.x, bias});
    for (bool relu : {false, true}) {
      const std::string plain_op = relu ? "FusedBatchNormReluTraining" : "FusedBatchNormTraining";
      const std::string op = relu ? "FusedBiasBatchNormReluTraining" : "FusedBiasBatchNormTraining";
      std::vector<Tensor> want = *RunV(plain_op, {xb, in.gamma, in.beta}, EpsAttrs());
      // The reference: ReluGrad, then the plain gradient, on x + bias.
      const Tensor dy = relu ? Run1("ReluGrad", {in.dy, want[0]}) : in.dy;
      std::vector<Tensor> want_grad =
          *RunV("FusedBatchNormTrainingGrad", {dy, xb, in.gamma, want[1], want[2]}, EpsAttrs());
      const Tensor want_dbias = Run1("SumToShapeOf", {want_grad[0], bias_like});
      std::vector<Tensor> grad_in = {in.dy, in.x, in.gamma, want[1], want[2]};
      if (relu) grad_in.push_back(in.beta);
      grad_in.push_back(bias);
      for (const auto& pool : pools) {
        Result<std::vector<Tensor>> f =
            RunOn(pool.get(), op, {in.x, in.gamma, in.beta, bias}, EpsAttrs());
        ASSERT_TRUE(f.ok()) << f.status();
        for (size_t i = 0; i < 3; ++i) {
          EXPECT_TRUE(SameBits((*f)[i], want[i])) << op << shape.ToString() << " output " << i;
        }
        Result<std::vector<Tensor>> g = RunOn(pool.get(), op + "Grad", grad_in, EpsAttrs());
        ASSERT_TRUE(g.ok()) << g.status();
        for (size_t i = 0; i < 3; ++i) {
          EXPECT_TRUE(SameBits((*g)[i], want_grad[i])) << op << shape.ToString() << " grad " << i;
        }
        ASSERT_EQ((*g)[3].num_elements(), c);
        EXPECT_EQ(std::memcmp((*g)[3].data<float>(), want_dbias.data<float>(), c * sizeof(float)),
                  0)
            << op << shape.ToString() << " dbias";
      }
    }
  }
}

// AddRelu(a, b) has the bits of Relu(AddV2(a, b)) (including -0 and NaN) for any thread count.
TEST(AddReluTest, EqualsAddThenReluBits) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  pools.push_back(nullptr);
  for (int n = 1; n <= 4; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "ar"));
  for (const TensorShape& shape : Shapes()) {
    Tensor a = Random(shape, 7), b = Random(shape, 8);
    float* pa = a.data<float>();
    pa[0] = -0.f;
    b.data<float>()[0] = -0.f;
    if (a.num_elements() > 2) pa[1] = std::nanf("");
    const Tensor want = Run1("Relu", {Run1("AddV2", {a, b})});
    for (const auto& pool : pools) {
      Result<std::vector<Tensor>> got = RunOn(pool.get(), "AddRelu", {a, b}, AttrMap());
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(SameBits((*got)[0], want)) << shape.ToString();
    }
  }
  Result<std::vector<Tensor>> mismatch =
      RunV("AddRelu", {Random(TensorShape({2, 3}), 1), Random(TensorShape({3}), 2)});
  EXPECT_FALSE(mismatch.ok());
}

// AddReluGrad(g1, g2, y) has the bits of ReluGrad(AddN(g1, g2), y), including -0 sums, NaN
// gradients and y = 0, for any thread count; unequal shapes are refused.
TEST(AddReluTest, GradEqualsAddNThenReluGradBits) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  pools.push_back(nullptr);
  for (int n = 1; n <= 4; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "arg"));
  for (const TensorShape& shape : Shapes()) {
    Tensor g1 = Random(shape, 9), g2 = Random(shape, 10), y = Run1("Relu", {Random(shape, 11)});
    g1.data<float>()[0] = -0.f;
    g2.data<float>()[0] = -0.f;
    if (g1.num_elements() > 2) {
      g1.data<float>()[1] = std::nanf("");
      y.data<float>()[2] = 0.f;
    }
    const Tensor want = Run1("ReluGrad", {Run1("AddN", {g1, g2}), y});
    for (const auto& pool : pools) {
      Result<std::vector<Tensor>> got = RunOn(pool.get(), "AddReluGrad", {g1, g2, y}, AttrMap());
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(SameBits((*got)[0], want)) << shape.ToString();
    }
  }
  Result<std::vector<Tensor>> mismatch =
      RunV("AddReluGrad", {Random(TensorShape({2, 3}), 1), Random(TensorShape({2, 3}), 2),
                           Random(TensorShape({3}), 3)});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("output"), std::string::npos) << mismatch.status();
}

// The AddRelu variants against the plain (Bias) op, then AddRelu with the shortcut: same bits
// (including -0 and NaN shortcuts) for any thread count; a shortcut unlike x is refused.
TEST(FusedBatchNormTest, AddReluVariantsEqualSeparateOpsBits) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  pools.push_back(nullptr);
  for (int n = 1; n <= 4; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "bnar"));
  uint32_t seed = 600;
  for (const TensorShape& shape : Shapes()) {
    Inputs in = MakeInputs(shape, seed += 4);
    const Tensor bias = Random(TensorShape({in.gamma.num_elements()}), seed, -2.0, 2.0);
    Tensor shortcut = Random(shape, seed + 1);
    shortcut.data<float>()[0] = -0.f;
    if (shortcut.num_elements() > 2) shortcut.data<float>()[1] = std::nanf("");
    for (bool with_bias : {false, true}) {
      const std::string op =
          with_bias ? "FusedBiasBatchNormAddReluTraining" : "FusedBatchNormAddReluTraining";
      std::vector<Tensor> plain_in = {in.x, in.gamma, in.beta};
      if (with_bias) plain_in.push_back(bias);
      std::vector<Tensor> want =
          *RunV(with_bias ? "FusedBiasBatchNormTraining" : "FusedBatchNormTraining", plain_in,
                EpsAttrs());
      want[0] = Run1("AddRelu", {want[0], shortcut});
      plain_in.push_back(shortcut);
      for (const auto& pool : pools) {
        Result<std::vector<Tensor>> f = RunOn(pool.get(), op, plain_in, EpsAttrs());
        ASSERT_TRUE(f.ok()) << f.status();
        for (size_t i = 0; i < 3; ++i) {
          EXPECT_TRUE(SameBits((*f)[i], want[i])) << op << shape.ToString() << " output " << i;
        }
      }
    }
  }
  const Tensor x = Random(TensorShape({2, 3}), 1), c3 = Random(TensorShape({3}), 2);
  Result<std::vector<Tensor>> bad = RunV("FusedBatchNormAddReluTraining",
                                         {x, c3, c3, Random(TensorShape({3, 2}), 3)}, EpsAttrs());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("shortcut"), std::string::npos) << bad.status();
}

TEST(FusedBatchNormTest, ShapeErrorsNameTheArgument) {
  Tensor x = Random(TensorShape({2, 3}), 1);
  Tensor c2 = Random(TensorShape({2}), 2);
  Result<std::vector<Tensor>> r = RunV("FusedBatchNormTraining", {x, c2, c2}, EpsAttrs());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gamma"), std::string::npos) << r.status();
  Result<std::vector<Tensor>> no_eps = RunV("FusedBatchNormTraining", {x, c2, c2});
  EXPECT_FALSE(no_eps.ok());
}

}  // namespace
}  // namespace troupe
