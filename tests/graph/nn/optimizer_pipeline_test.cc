// The base-optimizer pipeline: clipping, weight decay exclusion, schedules without a
// learning_rate variable, and gradient accumulation's iteration semantics.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/nn/gradient_transforms.h"
#include "graph/nn/optimizer_config.h"

namespace troupe::nn {
namespace {

Variable Var(const std::string& name, std::vector<float> values) {
  Tensor t = *Tensor::Zeros(DType::kFloat32,
                            *TensorShape::FromDims({static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return *Variable::Create(Value(t), name);
}

Value Grad(std::vector<float> values) { return Var("g", std::move(values)).Read(); }

std::vector<float> Values(const Variable& v) {
  Tensor t = v.value();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

TEST(GradientTransformsTest, ClipByNormPerturbsBelowTheThreshold) {
  std::vector<float> g = {0.3f, 0.4f};  // norm 0.5
  std::vector<float> want = {(0.3f * 0.7f) / 0.7f, (0.4f * 0.7f) / 0.7f};
  ClipByNorm(g, 0.7);
  EXPECT_EQ(g, want);
  std::vector<float> big = {3.0f, 4.0f};  // norm 5
  ClipByNorm(big, 1.0);
  EXPECT_EQ(big, (std::vector<float>{3.0f / 5.0f, 4.0f / 5.0f}));
}

TEST(GradientTransformsTest, GlobalNormScaleIsNotAlwaysOne) {
  std::vector<float> a = {0.01f}, b = {0.0f};
  ClipByGlobalNorm({a, b}, 0.03);  // below: scale f32(0.03) * f32(1/0.03) = 0.99999994
  EXPECT_EQ(a[0], 0.01f * (0.03f * static_cast<float>(1.0 / 0.03)));
  EXPECT_NE(a[0], 0.01f);
  std::vector<float> c = {3.0f}, d = {4.0f};
  ClipByGlobalNorm({c, d}, 1.0);
  EXPECT_EQ(c[0], 3.0f * (1.0f * (1.0f / 5.0f)));
  std::vector<float> e = {5.0f, -0.1f};
  ClipByValue(e, 0.5);
  EXPECT_EQ(e, (std::vector<float>{0.5f, -0.1f}));
}

TEST(GradientTransformsTest, SumOfSquaresIsTfsOrder) {
  std::vector<float> x(37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i) * 1e-3f;
  // Four 8-float accumulators over 32 elements, summed, then the tail of 5 sequentially,
  // plus the packet's pairwise sum.
  float acc[8] = {};
  for (int j = 0; j < 32; j += 32) {
    float p[4][8];
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 8; ++l) p[k][l] = x[j + k * 8 + l] * x[j + k * 8 + l];
    }
    for (int l = 0; l < 8; ++l) acc[l] = ((p[0][l] + p[1][l]) + p[2][l]) + p[3][l];
  }
  float tail = 0;
  for (int j = 32; j < 37; ++j) tail += x[j] * x[j];
  float h[4];
  for (int l = 0; l < 4; ++l) h[l] = acc[l] + acc[l + 4];
  EXPECT_EQ(TfSumOfSquares(x), tail + ((h[0] + h[2]) + (h[1] + h[3])));
}

TEST(OptimizerPipelineTest, WeightDecaySkipsNoDecayMatches) {
  OptimizerConfig c;
  c.name = "sgd";
  c.learning_rate = 0.5;
  c.weight_decay = 0.1;
  c.no_decay = {"bias$", "gamma"};
  auto opt = *MakeOptimizer(c);
  Variable k = Var("dense/kernel", {2.0f}), b = Var("dense/bias", {2.0f});
  Variable g = Var("norm/gamma", {2.0f});
  ASSERT_TRUE(opt->ApplyGradients({Grad({0}), Grad({0}), Grad({0})}, {k, b, g}).ok());
  EXPECT_EQ(Values(k)[0], 2.0f - (2.0f * 0.1f) * 0.5f);
  EXPECT_EQ(Values(b)[0], 2.0f);
  EXPECT_EQ(Values(g)[0], 2.0f);
}

TEST(OptimizerPipelineTest, ScheduleHasNoLearningRateVariable) {
  OptimizerConfig c;
  c.name = "sgd";
  c.learning_rate = 1.0;
  c.schedule.kind = "piecewise";
  c.schedule.boundaries = {0};
  c.schedule.values = {1.0, 0.5};
  auto opt = *MakeOptimizer(c);
  Variable w = Var("w", {0.0f});
  ASSERT_TRUE(opt->ApplyGradients({Grad({1})}, {w}).ok());  // step 0: lr 1
  ASSERT_TRUE(opt->ApplyGradients({Grad({1})}, {w}).ok());  // step 1: lr 0.5
  EXPECT_EQ(Values(w)[0], -1.5f);
  EXPECT_FALSE(opt->learning_rate().valid());
  EXPECT_EQ(opt->NamedVariables()[0].first, "iteration");
  EXPECT_EQ(opt->NamedVariables().size(), 1u);  // plain SGD: no slots
  EXPECT_EQ(opt->LearningRateAt(0), 1.0f);
  EXPECT_EQ(opt->LearningRateAt(1), 0.5f);
}

TEST(OptimizerPipelineTest, AccumulationCountsMicroSteps) {
  OptimizerConfig c;
  c.name = "adam";
  c.learning_rate = 0.1;
  c.gradient_accumulation_steps = 4;
  c.schedule.kind = "piecewise";
  c.schedule.boundaries = {2};
  c.schedule.values = {0.1, 0.01};
  c.use_ema = true;
  auto opt = *MakeOptimizer(c);
  Variable w = Var("w", {1.0f});
  // The first update is the 4th micro-step: schedule at step 3 (> 2: 0.01), Adam step 1.
  EXPECT_EQ(opt->LearningRateAt(0), 0.01f);
  ASSERT_TRUE(opt->ApplyGradients({Grad({0.5f})}, {w}).ok());
  EXPECT_EQ(opt->iterations().value().scalar<int64_t>(), 4);
  const float alpha =
      0.01f * std::sqrt(1.0f - std::pow(0.999f, 1.0f)) / (1.0f - std::pow(0.9f, 1.0f));
  const float m = 0.0f + (0.5f - 0.0f) * static_cast<float>(1.0 - 0.9);
  const float v = 0.0f + (0.25f - 0.0f) * static_cast<float>(1.0 - 0.999);
  EXPECT_EQ(Values(w)[0], 1.0f - (m * alpha) / (std::sqrt(v) + 1e-7f));
  // Keras' variables: iteration, averages, accumulators (zero), then m, v.
  std::vector<std::string> names;
  for (const auto& [name, var] : opt->NamedVariables()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"iteration", "w_average", "w_gradient_accumulator",
                                             "w_momentum", "w_velocity"}));
  EXPECT_EQ(Values(opt->Accumulator(w))[0], 0.0f);
  EXPECT_EQ(Values(opt->Average(w))[0], Values(w)[0]);  // first EMA step copies
}

TEST(OptimizerPipelineTest, RmspropSlotsAreGroupedByKind) {
  OptimizerConfig c;
  c.name = "rmsprop";
  c.momentum = 0.5;
  c.centered = true;
  auto opt = *MakeOptimizer(c);
  Variable a = Var("a", {1.0f}), b = Var("b", {1.0f});
  ASSERT_TRUE(opt->ApplyGradients({Grad({1}), Grad({1})}, {a, b}).ok());
  std::vector<std::string> names;
  for (const auto& [name, var] : opt->NamedVariables()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"iteration", "learning_rate", "a_velocity",
                                             "b_velocity", "a_momentum", "b_momentum",
                                             "a_average_gradient", "b_average_gradient"}));
}

}  // namespace
}  // namespace troupe::nn
