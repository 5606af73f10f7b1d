// FusedLayerNorm / FusedLayerNormGrad (kernels/layer_norm.cc): the forward op equals the unfused
// Keras graph (Mean, SquaredDifference, Rsqrt, Mul, Neg, Add) bit for bit, the backward op
// matches a float64 reference of that graph's gradient, and both keep their bits for any
// thread count. Shapes: the transformer_lm's [12, 64, 128] and odd ones.
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

constexpr double kEps = 1e-5;

AttrMap EpsAttrs() {
  AttrMap a;
  a.Set("epsilon", kEps);
  return a;
}

const std::vector<TensorShape>& Shapes() {
  static const std::vector<TensorShape> shapes = {{12, 64, 128}, {3, 5, 7}, {4, 40}, {2, 17000}};
  return shapes;
}

TEST(FusedLayerNormTest, ForwardEqualsUnfusedGraphBits) {
  uint32_t seed = 1;
  for (const TensorShape& shape : Shapes()) {
    const int64_t d = shape.dim(shape.rank() - 1);
    Tensor x = Random(shape, seed++, 1.0, 3.0);
    Tensor gamma = Random(TensorShape({d}), seed++, 0.5, 1.5);
    Tensor beta = Random(TensorShape({d}), seed++);
    Result<std::vector<Tensor>> fused = RunV("FusedLayerNorm", {x, gamma, beta}, EpsAttrs());
    ASSERT_TRUE(fused.ok()) << fused.status();
    // nn::LayerNormalization's graph.
    AttrMap last;
    last.Set("axis", int64_t{-1});
    last.Set("keep_dims", true);
    Tensor mean = Run1("Mean", {x}, last);
    Tensor var = Run1("Mean", {Run1("SquaredDifference", {x, mean})}, last);
    Tensor eps = *Tensor::FromVector<float>({static_cast<float>(kEps)}, TensorShape({}));
    Tensor inv = Run1("Mul", {Run1("Rsqrt", {Run1("Add", {var, eps})}), gamma});
    Tensor res = Run1("Add", {Run1("Mul", {Run1("Neg", {mean}), inv}), beta});
    Tensor y = Run1("Add", {Run1("Mul", {x, inv}), res});
    EXPECT_TRUE(SameBits((*fused)[0], y)) << shape.ToString();
    EXPECT_TRUE(SameBits((*fused)[1], mean)) << shape.ToString();
    EXPECT_TRUE(SameBits((*fused)[2], var)) << shape.ToString();
  }
}

TEST(FusedLayerNormTest, BackwardMatchesFloat64Reference) {
  uint32_t seed = 50;
  for (const TensorShape& shape : Shapes()) {
    const int64_t d = shape.dim(shape.rank() - 1), rows = shape.num_elements() / d;
    Tensor x = Random(shape, seed++, 1.0, 3.0);
    Tensor gamma = Random(TensorShape({d}), seed++, 0.5, 1.5);
    Tensor beta = Random(TensorShape({d}), seed++);
    Tensor dy = Random(shape, seed++);
    std::vector<Tensor> f = *RunV("FusedLayerNorm", {x, gamma, beta}, EpsAttrs());
    Result<std::vector<Tensor>> g =
        RunV("FusedLayerNormGrad", {dy, x, gamma, f[1], f[2]}, EpsAttrs());
    ASSERT_TRUE(g.ok()) << g.status();
    const float* xp = x.data<float>();
    const float* dyp = dy.data<float>();
    const float* gp = gamma.data<float>();
    std::vector<double> dgamma(static_cast<size_t>(d)), dbeta(static_cast<size_t>(d));
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = xp + r * d;
      const float* dyr = dyp + r * d;
      double m = 0, v = 0, s1 = 0, s2 = 0;
      for (int64_t j = 0; j < d; ++j) m += xr[j];
      m /= static_cast<double>(d);
      for (int64_t j = 0; j < d; ++j) v += (xr[j] - m) * (xr[j] - m);
      v /= static_cast<double>(d);
      const double rstd = 1 / std::sqrt(v + static_cast<double>(static_cast<float>(kEps)));
      for (int64_t j = 0; j < d; ++j) {
        const double xhat = (xr[j] - m) * rstd;
        s1 += dyr[j] * gp[j];
        s2 += dyr[j] * gp[j] * xhat;
        dgamma[static_cast<size_t>(j)] += dyr[j] * xhat;
        dbeta[static_cast<size_t>(j)] += dyr[j];
      }
      for (int64_t j = 0; j < d; ++j) {
        const double xhat = (xr[j] - m) * rstd;
        const double want = rstd * (dyr[j] * gp[j] - s1 / d - xhat * s2 / d);
        ASSERT_NEAR((*g)[0].data<float>()[r * d + j], want, 1e-4 * (std::abs(want) + rstd))
            << shape.ToString() << " row " << r << " col " << j;
      }
    }
    for (int64_t j = 0; j < d; ++j) {
      const double tol = 1e-5 * static_cast<double>(rows) + 1e-5;
      EXPECT_NEAR((*g)[1].data<float>()[j], dgamma[static_cast<size_t>(j)], tol) << j;
      EXPECT_NEAR((*g)[2].data<float>()[j], dbeta[static_cast<size_t>(j)], tol) << j;
    }
  }
}

TEST(FusedLayerNormTest, SameBitsForAnyThreadCount) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int n = 1; n <= 3; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "ln"));
  uint32_t seed = 90;
  for (const TensorShape& shape : Shapes()) {
    const int64_t d = shape.dim(shape.rank() - 1);
    const std::vector<Tensor> in = {Random(shape, seed++), Random(TensorShape({d}), seed++),
                                    Random(TensorShape({d}), seed++)};
    Result<std::vector<Tensor>> f0 = RunOn(nullptr, "FusedLayerNorm", in, EpsAttrs());
    ASSERT_TRUE(f0.ok()) << f0.status();
    const std::vector<Tensor> bin = {Random(shape, seed++), in[0], in[1], (*f0)[1], (*f0)[2]};
    Result<std::vector<Tensor>> b0 = RunOn(nullptr, "FusedLayerNormGrad", bin, EpsAttrs());
    ASSERT_TRUE(b0.ok()) << b0.status();
    for (const auto& pool : pools) {
      Result<std::vector<Tensor>> f = RunOn(pool.get(), "FusedLayerNorm", in, EpsAttrs());
      Result<std::vector<Tensor>> b = RunOn(pool.get(), "FusedLayerNormGrad", bin, EpsAttrs());
      ASSERT_TRUE(f.ok() && b.ok());
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(SameBits((*f)[i], (*f0)[i])) << shape.ToString() << " forward " << i;
        EXPECT_TRUE(SameBits((*b)[i], (*b0)[i])) << shape.ToString() << " backward " << i;
      }
    }
  }
}

}  // namespace
}  // namespace troupe
