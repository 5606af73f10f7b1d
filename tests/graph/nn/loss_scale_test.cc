// nn::DynamicLossScale: Keras' LossScaleOptimizer rule (initial 2^15, x2 after growth_steps
// finite steps, x0.5 and counter reset on a non-finite step, no lower bound) and its variables.
#include "graph/nn/loss_scale.h"

#include <gtest/gtest.h>

namespace troupe::nn {
namespace {

TEST(DynamicLossScaleTest, StartsAtKerasDefaults) {
  Result<DynamicLossScale> s = DynamicLossScale::Create();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->scale(), 32768.0f);
  EXPECT_EQ(s->step_counter(), 0);
  EXPECT_EQ(s->dynamic_scale_variable().name(), "dynamic_scale");
  EXPECT_EQ(s->dynamic_scale_variable().dtype(), DType::kFloat32);
  EXPECT_EQ(s->step_counter_variable().name(), "step_counter");
  EXPECT_EQ(s->step_counter_variable().dtype(), DType::kInt64);
  EXPECT_FALSE(s->dynamic_scale_variable().trainable());
  EXPECT_EQ(s->iterations_variable().value().scalar<int64_t>(), 0);
  EXPECT_EQ(s->learning_rate_variable().value().scalar<float>(), 0.0f);
  EXPECT_FALSE(DynamicLossScale::Create(0.0).ok());
  EXPECT_FALSE(DynamicLossScale::Create(1.0, 0).ok());
}

TEST(DynamicLossScaleTest, GrowsAfterGrowthStepsFiniteSteps) {
  DynamicLossScale s = *DynamicLossScale::Create();
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 32768.0f);
  EXPECT_EQ(s.step_counter(), 1999);
  ASSERT_TRUE(s.Update(true).ok());  // the 2000th finite step doubles (after its update)
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.step_counter(), 0);
}

TEST(DynamicLossScaleTest, HalvesAndResetsOnNonFiniteWithNoLowerBound) {
  DynamicLossScale s = *DynamicLossScale::Create(4.0, 3);
  ASSERT_TRUE(s.Update(true).ok());
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.step_counter(), 2);
  ASSERT_TRUE(s.Update(false).ok());
  EXPECT_EQ(s.scale(), 2.0f);
  EXPECT_EQ(s.step_counter(), 0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s.Update(false).ok());
  EXPECT_EQ(s.scale(), 0.125f);  // below 1: Keras has no floor
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 0.25f);
  // The state is in the variables (what checkpoints save and restore).
  ASSERT_TRUE(s.dynamic_scale_variable().SetValue(Tensor::Scalar<float>(8.0f)).ok());
  ASSERT_TRUE(s.step_counter_variable().SetValue(Tensor::Scalar<int64_t>(2)).ok());
  ASSERT_TRUE(s.Update(true).ok());
  EXPECT_EQ(s.scale(), 16.0f);
  EXPECT_EQ(s.step_counter(), 0);
}

}  // namespace
}  // namespace troupe::nn
