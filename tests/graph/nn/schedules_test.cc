// Learning-rate schedules against hand-computed float32 values, and config validation.
#include "graph/nn/schedules.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/nn/optimizer_config.h"

namespace troupe::nn {
namespace {

TEST(ScheduleTest, PiecewiseIsUpperInclusive) {
  ScheduleConfig s;
  s.kind = "piecewise";
  s.boundaries = {5, 10};
  s.values = {0.1, 0.01, 0.001};
  EXPECT_EQ(ScheduleLearningRate(s, 0, 0), 0.1f);
  EXPECT_EQ(ScheduleLearningRate(s, 0, 5), 0.1f);
  EXPECT_EQ(ScheduleLearningRate(s, 0, 6), 0.01f);
  EXPECT_EQ(ScheduleLearningRate(s, 0, 10), 0.01f);
  EXPECT_EQ(ScheduleLearningRate(s, 0, 11), 0.001f);
}

TEST(ScheduleTest, ExponentialAndInverseTime) {
  ScheduleConfig s;
  s.kind = "exponential";
  s.decay_steps = 4;
  s.decay_rate = 0.5;
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 2), 0.1f * std::pow(0.5f, 2.0f / 4.0f));
  s.staircase = true;
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 7), 0.1f * std::pow(0.5f, 1.0f));
  s.kind = "inverse_time";
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 9), 0.1f / (1.0f + 0.5f * 2.0f));
  s.staircase = false;
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 9), 0.1f / (1.0f + 0.5f * (9.0f / 4.0f)));
}

TEST(ScheduleTest, CosineWithWarmup) {
  ScheduleConfig s;
  s.kind = "cosine";
  s.decay_steps = 10;
  s.alpha = 0.1;
  const float pi = static_cast<float>(M_PI);
  auto cosine = [&](float step, float from) {
    const float c = 0.5f * (1.0f + std::cos(pi * (step / 10.0f)));
    return from * (static_cast<float>(0.9) * c + static_cast<float>(0.1));
  };
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 0), 0.2f);
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 3), cosine(3, 0.2f));
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 50), cosine(10, 0.2f));  // clamped at decay_steps
  s.warmup_steps = 4;
  s.warmup_target = 1.0;
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 0), 0.2f);  // warmup starts at the initial rate
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 2), (1.0f - 0.2f) * (2.0f / 4.0f) + 0.2f);
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 4), 1.0f);  // cosine from warmup_target
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 7), cosine(3, 1.0f));
  EXPECT_EQ(ScheduleLearningRate(s, 0.2, 100), cosine(10, 1.0f));
}

TEST(ScheduleTest, Polynomial) {
  ScheduleConfig s;
  s.kind = "polynomial";
  s.decay_steps = 10;
  s.end_learning_rate = 0.01;
  s.power = 2;
  const float d = 0.1f - 0.01f;
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 5), d * std::pow(1.0f - 0.5f, 2.0f) + 0.01f);
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 15), d * std::pow(0.0f, 2.0f) + 0.01f);
  s.cycle = true;  // step 15 decays over 20 steps
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 15), d * std::pow(1.0f - 15.0f / 20.0f, 2.0f) + 0.01f);
  EXPECT_EQ(ScheduleLearningRate(s, 0.1, 0), 0.1f);
}

TEST(ScheduleTest, Validation) {
  ScheduleConfig s;
  s.kind = "linear";
  EXPECT_EQ(ValidateSchedule(s).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateSchedule(s).message().find("schedule.kind"), std::string::npos);
  s.kind = "piecewise";
  s.boundaries = {5, 5};
  s.values = {1, 2, 3};
  EXPECT_NE(ValidateSchedule(s).message().find("schedule.boundaries"), std::string::npos);
  s.boundaries = {5, 6};
  s.values = {1, 2};
  EXPECT_NE(ValidateSchedule(s).message().find("schedule.values"), std::string::npos);
  s.values = {1, 2, 3};
  EXPECT_TRUE(ValidateSchedule(s).ok());
  s = {};
  s.kind = "cosine";
  EXPECT_TRUE(ValidateSchedule(s).ok());  // decay_steps defaults to 1000
  s.decay_steps = 0;
  EXPECT_NE(ValidateSchedule(s).message().find("schedule.decay_steps"), std::string::npos);
  s.decay_steps = 10;
  s.warmup_steps = -1;
  EXPECT_NE(ValidateSchedule(s).message().find("schedule.warmup_steps"), std::string::npos);
}

// Keras' CosineDecay silently skips warmup_steps without a warmup_target; Troupe refuses it.
TEST(ScheduleTest, WarmupStepsNeedATarget) {
  ScheduleConfig s;
  s.kind = "cosine";
  s.decay_steps = 10;
  s.warmup_steps = 5;
  EXPECT_EQ(ValidateSchedule(s).message(),
            "schedule.warmup_steps = 5 needs schedule.warmup_target, the "
            "rate the warmup climbs to (without it Keras' CosineDecay does no warmup); set "
            "warmup_target or remove warmup_steps");
  EXPECT_FALSE(SchedulesWarmup(s));
  s.warmup_target = 0.1;
  EXPECT_TRUE(ValidateSchedule(s).ok());
  EXPECT_TRUE(SchedulesWarmup(s));
}

// A learning rate of 0 only as the start of a warmup (Keras' CosineDecay(0, warmup_target=...)).
TEST(OptimizerConfigTest, LearningRateZeroOnlyWarmsUp) {
  OptimizerConfig c;
  c.learning_rate = 0;
  Status s = ValidateOptimizerConfig(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("learning_rate = 0 never updates the weights"), std::string::npos)
      << s;
  c.schedule.kind = "cosine";
  c.schedule.decay_steps = 10;
  c.schedule.warmup_steps = 2;
  c.schedule.warmup_target = 0.01;
  EXPECT_TRUE(ValidateOptimizerConfig(c).ok());
  Result<std::unique_ptr<Optimizer>> opt = MakeOptimizer(c);
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ((*opt)->LearningRateAt(0), 0.0f);
  EXPECT_EQ((*opt)->LearningRateAt(1), ScheduleLearningRate(c.schedule, 0, 1));
  EXPECT_GT((*opt)->LearningRateAt(1), 0.0f);
  EXPECT_EQ((*opt)->LearningRateAt(2), 0.01f);
}

TEST(OptimizerConfigTest, RefusesWhatKerasRefuses) {
  OptimizerConfig c;
  c.clipnorm = 1;
  c.clipvalue = 1;
  Result<std::unique_ptr<Optimizer>> r = MakeOptimizer(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("only one of"), std::string::npos);
  c = {};
  c.name = "adagrad2";
  EXPECT_NE(MakeOptimizer(c).status().message().find("name: unknown optimizer 'adagrad2'"),
            std::string::npos);
  c = {};
  c.name = "lion";
  c.beta_1 = 0;
  EXPECT_FALSE(MakeOptimizer(c).ok());
  c = {};
  c.name = "sgd";
  c.momentum = 1.5;
  EXPECT_NE(MakeOptimizer(c).status().message().find("momentum: must be in [0, 1]"),
            std::string::npos);
  c = {};
  c.no_decay = {"("};
  EXPECT_NE(MakeOptimizer(c).status().message().find("no_decay: "), std::string::npos);
  c = {};
  c.gradient_accumulation_steps = 0;
  EXPECT_NE(MakeOptimizer(c).status().message().find("gradient_accumulation_steps: "),
            std::string::npos);
  c = {};
  c.name = "adamw";
  Result<std::unique_ptr<Optimizer>> adamw = MakeOptimizer(c);
  ASSERT_TRUE(adamw.ok());
  EXPECT_EQ((*adamw)->pipeline().weight_decay, 0.004);  // Keras' AdamW default
}

}  // namespace
}  // namespace troupe::nn
