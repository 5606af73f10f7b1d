#include "graph/nn/normalization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/function.h"
#include "graph/nn/activations.h"
#include "graph/nn/reshaping.h"
#include "graph/ops.h"
#include "graph/tape.h"

namespace troupe {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }

std::vector<float> Data(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

// x: 4 rows x 2 channels.
Tensor X() { return Floats({1, 10, 2, 20, 3, 30, 6, 60}, {4, 2}); }

TEST(BatchNormalizationTest, TrainingUpdatesMovingStatsAsKeras) {
  nn::BatchNormOptions o;
  o.momentum = 0.99;
  nn::BatchNormalization bn("bn", o);
  Value y = bn(Value(X()), /*training=*/true);
  ASSERT_TRUE(y.ok()) << y.status();
  // Batch mean of channel 0 = 3, biased variance = (4+1+0+9)/4 = 3.5. Keras: moving*0.99f +
  // stat*f32(1.0-0.99) where 1.0-0.99 is rounded from double (0.0099999998f, not 1-0.99f).
  const float w = static_cast<float>(1.0 - 0.99);
  EXPECT_NE(w, 1.0f - 0.99f);
  const float mean0 = 0.0f * 0.99f + 3.0f * w;
  const float var0 = 1.0f * 0.99f + 3.5f * w;
  EXPECT_EQ(Data(bn.moving_mean().value())[0], mean0);
  EXPECT_EQ(Data(bn.moving_variance().value())[0], var0);
  EXPECT_EQ(Data(bn.moving_mean().value())[1], 0.0f * 0.99f + 30.0f * w);
  // The output is normalized with the batch statistics.
  std::vector<float> out = Data(*y.tensor());
  EXPECT_NEAR(out[0], (1 - 3) / std::sqrt(3.5f + 1e-3f), 1e-6);
}

TEST(BatchNormalizationTest, InferenceAndFrozenUseMovingStatsWithoutUpdating) {
  for (bool frozen : {false, true}) {
    nn::BatchNormOptions o;
    o.trainable = !frozen;
    nn::BatchNormalization bn("bn", o);
    // Inference call when not frozen; a training call on a frozen layer behaves the same.
    Value y = bn(Value(X()), /*training=*/frozen);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(Data(bn.moving_mean().value()), (std::vector<float>{0, 0}));
    EXPECT_EQ(Data(bn.moving_variance().value()), (std::vector<float>{1, 1}));
    EXPECT_NEAR(Data(*y.tensor())[1], 10 / std::sqrt(1.0f + 1e-3f), 1e-5);
    EXPECT_EQ(bn.gamma().trainable(), !frozen);
    EXPECT_FALSE(bn.moving_mean().trainable());
  }
}

TEST(BatchNormalizationTest, VariablesInKerasOrder) {
  nn::BatchNormalization bn("bn");
  ASSERT_TRUE(bn.Build(TensorShape{-1, 3}).ok());
  std::vector<std::string> names;
  for (auto& [path, v] : bn.NamedVariables()) names.push_back(path);
  EXPECT_EQ(names, (std::vector<std::string>{"gamma", "beta", "moving_mean", "moving_variance"}));
}

TEST(BatchNormalizationTest, SynchronizedSumsThroughTheHook) {
  // Two identical replicas: the hook doubles every sum, which leaves mean and variance as one
  // replica's; Keras' one-pass formula max(E[x^2] - E[x]^2, 0) gives the two-pass values here.
  int calls = 0;
  nn::BatchNormOptions o;
  o.synchronized = true;
  o.cross_replica_sum = [&calls](const Value& v) {
    ++calls;
    return ops::Mul(v, ops::Scalar(2));
  };
  nn::BatchNormalization bn("bn", o);
  Value y = bn(Value(X()), true);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(calls, 3);  // sum, sum of squares, count
  const float w = static_cast<float>(1.0 - 0.99);
  EXPECT_FLOAT_EQ(Data(bn.moving_mean().value())[0], 3.0f * w);
  EXPECT_FLOAT_EQ(Data(bn.moving_variance().value())[0], 0.99f + 3.5f * w);
}

TEST(BatchNormalizationTest, SynchronizedSumsThroughTheTrainingLoopsScope) {
  int calls = 0;
  nn::CrossReplicaScope scope([&calls](const Value& v) {
    ++calls;
    return ops::Mul(v, ops::Scalar(3));  // three identical replicas
  });
  nn::BatchNormOptions o;
  o.synchronized = true;
  nn::BatchNormalization bn("bn", o);
  ASSERT_TRUE(bn(Value(X()), true).ok());
  EXPECT_EQ(calls, 3);
  EXPECT_FLOAT_EQ(Data(bn.moving_mean().value())[1], 30.0f * static_cast<float>(1.0 - 0.99));
  // Not synchronized: the scope is not used.
  nn::BatchNormalization local("local");
  ASSERT_TRUE(local(Value(X()), true).ok());
  EXPECT_EQ(calls, 3);
}

TEST(LayerNormalizationTest, NormalizesTheLastAxis) {
  nn::LayerNormalization ln("ln");
  Value y = ln(Value(Floats({1, 2, 3, 4, 10, 10, 10, 14}, {2, 4})));
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> out = Data(*y.tensor());
  // Row 0: mean 2.5, variance 1.25; epsilon defaults to 1e-3.
  EXPECT_NEAR(out[0], -1.5f / std::sqrt(1.25f + 1e-3f), 1e-6);
  EXPECT_NEAR(out[4], -1.0f / std::sqrt(3.0f + 1e-3f), 1e-6);
  std::vector<std::string> names;
  for (auto& [path, v] : ln.NamedVariables()) names.push_back(path);
  EXPECT_EQ(names, (std::vector<std::string>{"gamma", "beta"}));
}

Tensor RandomFloats(TensorShape shape, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (float& e : v) e = d(gen);
  return Floats(v, shape);
}

// Output and gradients (x, gamma, beta; seeded with cot) of a normalization layer's training
// call, and of the Keras formula written out with ops: mean and variance over `axes`,
// inv = rsqrt(var + eps) * gamma, y = x * inv + (beta - mean * inv).
struct NormRun {
  std::vector<float> y, dx, dgamma, dbeta;
};
NormRun LayerRun(nn::Layer& layer, const Tensor& x, const Tensor& cot, Variable gamma,
                 Variable beta) {
  GradientTape tape(/*persistent=*/true);
  Value xv(x);
  tape.Watch(xv);
  Value y = layer(xv, /*training=*/true);
  EXPECT_TRUE(y.ok()) << y.status();
  auto dx = tape.Gradient(y, {xv}, Value(cot));
  Value loss = ops::Sum(ops::Mul(y, Value(cot)));
  auto dw = tape.Gradient(loss, std::vector<Variable>{gamma, beta});
  EXPECT_TRUE(dx.ok() && dw.ok());
  return {Data(*y.tensor()), Data(*(*dx)[0].tensor()), Data(*(*dw)[0].tensor()),
          Data(*(*dw)[1].tensor())};
}
NormRun FormulaRun(const Tensor& x, const Tensor& cot, std::vector<int64_t> axes, double eps) {
  const int64_t d = x.dim(x.rank() - 1);
  Value xv(x), gamma(Floats(std::vector<float>(static_cast<size_t>(d), 1.0f), {d}));
  Value beta(Floats(std::vector<float>(static_cast<size_t>(d), 0.0f), {d}));
  GradientTape tape;
  for (const Value& v : {xv, gamma, beta}) tape.Watch(v);
  Value mean = ops::Mean(xv, axes, true);
  Value var = ops::Mean(ops::SquaredDifference(xv, ops::StopGradient(mean)), axes, true);
  Value inv = ops::Mul(ops::Rsqrt(ops::Add(var, ops::ScalarOf(eps, DType::kFloat32))), gamma);
  Value y = ops::Add(ops::Mul(xv, inv), ops::Sub(beta, ops::Mul(mean, inv)));
  auto g = tape.Gradient(y, {xv, gamma, beta}, Value(cot));
  EXPECT_TRUE(g.ok()) << g.status();
  return {Data(*y.tensor()), Data(*(*g)[0].tensor()), Data(*(*g)[1].tensor()),
          Data(*(*g)[2].tensor())};
}
void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float scale = 0;
  for (float w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5f * std::abs(want[i]) + 1e-5f * scale) << what << " " << i;
  }
}

// The training calls over the last axis run FusedBatchNormTraining / FusedLayerNorm and their
// gradient ops; they keep the Keras graph's output bits and its gradients.
TEST(BatchNormalizationTest, FusedTrainingCallMatchesTheKerasGraph) {
  const Tensor x = RandomFloats({8, 3, 3, 5}, 1, 1.0f, 3.0f);
  const Tensor cot = RandomFloats({8, 3, 3, 5}, 2, -1.0f, 1.0f);
  nn::BatchNormalization bn("bn");
  ASSERT_TRUE(bn.Build(x.shape()).ok());
  NormRun got = LayerRun(bn, x, cot, bn.gamma(), bn.beta());
  NormRun want = FormulaRun(x, cot, {0, 1, 2}, 1e-3);
  EXPECT_EQ(got.y, want.y);
  ExpectNear(got.dx, want.dx, "dx");
  ExpectNear(got.dgamma, want.dgamma, "dgamma");
  ExpectNear(got.dbeta, want.dbeta, "dbeta");
}

// CallAddRelu (the residual join handed to the layer: Fused[Bias]BatchNormAddReluTraining when
// training) has the output and gradient bits of the layer, then AddAllRelu, in training and
// inference, with and without a handed-over bias, in either Add order.
TEST(BatchNormalizationTest, CallAddReluMatchesSeparateLayersBits) {
  const Tensor x = RandomFloats({8, 3, 3, 5}, 5, 1.0f, 3.0f);
  const Tensor s = RandomFloats({8, 3, 3, 5}, 6, -2.0f, 2.0f);
  const Tensor cot = RandomFloats({8, 3, 3, 5}, 7, -1.0f, 1.0f);
  Variable bias = *Variable::Create(Value(RandomFloats({5}, 8, -1.0f, 1.0f)), "bias");
  for (bool with_bias : {false, true}) {
    for (bool training : {true, false}) {
      for (bool first : {false, true}) {
        nn::BatchNormalization bn("bn");
        if (with_bias) bn.set_input_bias([bias] { return bias; });
        auto run = [&](bool fused) {
          GradientTape tape(/*persistent=*/true);
          Value xv(x), sv(s);
          tape.Watch(xv);
          tape.Watch(sv);
          Value y = fused ? bn.CallAddRelu(xv, sv, training, first)
                          : nn::AddAllRelu(first ? std::vector<Value>{sv, bn(xv, training)}
                                                 : std::vector<Value>{bn(xv, training), sv});
          EXPECT_TRUE(y.ok()) << y.status();
          auto g = tape.Gradient(y, {xv, sv}, Value(cot));
          Value loss = ops::Sum(ops::Mul(y, Value(cot)));
          auto dw = tape.Gradient(loss, std::vector<Variable>{bn.gamma(), bn.beta(), bias});
          EXPECT_TRUE(g.ok() && dw.ok());
          std::vector<std::vector<float>> out = {Data(*y.tensor()), Data(*(*g)[0].tensor()),
                                                 Data(*(*g)[1].tensor())};
          for (const Value& w : *dw) {
            if (w.defined()) out.push_back(Data(*w.tensor()));
          }
          return out;
        };
        const auto want = run(false), got = run(true);
        EXPECT_EQ(got, want) << "bias " << with_bias << " training " << training << " first "
                             << first;
      }
    }
  }
}

// Traced, with the output read twice (its gradient is then the tape's AddN of two parts, as at
// a ResNet block's end, which AddReluGrad folds), CallAddRelu keeps the output and gradient
// bits of the separate layers' graph.
TEST(BatchNormalizationTest, TracedCallAddReluMatchesSeparateLayersBits) {
  const Tensor x = RandomFloats({8, 3, 3, 5}, 9, 1.0f, 3.0f);
  const Tensor s = RandomFloats({8, 3, 3, 5}, 10, -2.0f, 2.0f);
  const Tensor c1 = RandomFloats({8, 3, 3, 5}, 11, -1.0f, 1.0f);
  const Tensor c2 = RandomFloats({8, 3, 3, 5}, 12, -1.0f, 1.0f);
  Variable bias = *Variable::Create(Value(RandomFloats({5}, 13, -1.0f, 1.0f)), "bias");
  for (bool with_bias : {false, true}) {
    std::vector<std::vector<float>> runs[2];
    for (bool fused : {false, true}) {
      nn::BatchNormalization bn("bn");
      ASSERT_TRUE(bn.Build(x.shape()).ok());
      if (with_bias) bn.set_input_bias([bias] { return bias; });
      Function f("bn_add_relu", [&](const Args& a) -> Outputs {
        GradientTape tape;
        Value xv = a[0].value(), sv = a[1].value();
        tape.Watch(xv);
        tape.Watch(sv);
        Value y = fused ? bn.CallAddRelu(xv, sv, /*training=*/true, /*shortcut_first=*/true)
                        : nn::AddAllRelu({sv, bn(xv, /*training=*/true)});
        Value loss = ops::Add(ops::Sum(ops::Mul(y, Value(c1))), ops::Sum(ops::Mul(y, Value(c2))));
        auto g = tape.Gradient(loss, {xv, sv});
        if (!g.ok()) return g.status();
        return std::vector<Value>{y, (*g)[0], (*g)[1]};
      });
      auto r = f.Run({x, s});
      ASSERT_TRUE(r.ok()) << r.status();
      for (const Tensor& t : *r) runs[fused ? 1 : 0].push_back(Data(t));
    }
    EXPECT_EQ(runs[1], runs[0]) << "bias " << with_bias;
  }
}

TEST(LayerNormalizationTest, FusedCallMatchesTheKerasGraph) {
  const Tensor x = RandomFloats({4, 6, 32}, 3, 1.0f, 3.0f);
  const Tensor cot = RandomFloats({4, 6, 32}, 4, -1.0f, 1.0f);
  nn::LayerNormalization ln("ln");
  ASSERT_TRUE(ln.Build(x.shape()).ok());
  NormRun got = LayerRun(ln, x, cot, ln.gamma(), ln.beta());
  NormRun want = FormulaRun(x, cot, {2}, 1e-3);
  // Keras' layer norm writes y = x * inv + (-mean * inv + beta): the same bits here, as beta = 0.
  EXPECT_EQ(got.y, want.y);
  ExpectNear(got.dx, want.dx, "dx");
  ExpectNear(got.dgamma, want.dgamma, "dgamma");
  ExpectNear(got.dbeta, want.dbeta, "dbeta");
}

TEST(ActivationsTest, ReluOptionsFollowKeras) {
  Value x(Floats({-2, -0.5, 0.2, 0.7, 3, 8}, {6}));
  nn::ReluOptions o;
  o.max_value = 6.0;
  Value six = nn::KerasRelu(x, o);
  ASSERT_TRUE(six.ok()) << six.status();
  EXPECT_EQ(Data(*six.tensor()), (std::vector<float>{0, 0, 0.2f, 0.7f, 3, 6}));
  o.max_value = 2.0;
  o.threshold = 0.5;
  o.negative_slope = 0.1;
  // x > threshold kept (clipped at 2), else 0; minus slope * relu(threshold - x).
  Value y = nn::KerasRelu(x, o);
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> got = Data(*y.tensor());
  EXPECT_FLOAT_EQ(got[0], -0.1f * 2.5f);
  EXPECT_FLOAT_EQ(got[2], -0.1f * 0.3f);
  EXPECT_FLOAT_EQ(got[3], 0.7f);
  EXPECT_FLOAT_EQ(got[5], 2.0f);
  Result<nn::ActivationFn> bad = nn::ActivationByName("not_an_activation");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("supported: "), std::string::npos);
}

}  // namespace
}  // namespace troupe
