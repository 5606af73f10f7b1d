#include "graph/nn/normalization.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/nn/activations.h"
#include "graph/ops.h"

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
  Result<nn::ActivationFn> bad = nn::ActivationByName("mish");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("supported: "), std::string::npos);
}

}  // namespace
}  // namespace troupe
