// Dynamic loss scaling for mixed_float16, as Keras 3's LossScaleOptimizer (what
// `compile(auto_scale_loss=True)` wraps the optimizer in for that policy): the loss is
// multiplied by `scale()` before the backward pass and the gradients divided by it; after the
// gradients are reduced, Update(finite) decides the step:
//   finite:     apply the update; step_counter += 1, and when it reaches growth_steps (2000)
//               the scale doubles and the counter restarts at 0;
//   non-finite: skip the update (the inner optimizer's iterations do not advance); the scale
//               halves (no lower bound, as Keras) and the counter restarts at 0.
// The state lives in float32/int64 host variables named and laid out as Keras checkpoints them
// (optimizer/dynamic_scale, optimizer/step_counter, and the wrapper's own _iterations (0) and
// _learning_rate (0.0); the wrapped optimizer goes under optimizer/inner_optimizer).
#pragma once

#include <cstdint>

#include "core/result.h"
#include "graph/variable.h"

namespace troupe::nn {

class DynamicLossScale {
 public:
  static constexpr double kInitialScale = 32768.0;  // 2^15
  static constexpr int64_t kGrowthSteps = 2000;

  static Result<DynamicLossScale> Create(double initial_scale = kInitialScale,
                                         int64_t growth_steps = kGrowthSteps);

  float scale() const;
  int64_t step_counter() const;
  // Applies Keras' rule for one step; returns whether the update is applied (`finite`).
  Status Update(bool finite);

  const Variable& dynamic_scale_variable() const { return scale_; }
  const Variable& step_counter_variable() const { return counter_; }
  // The wrapper optimizer's own variables (Keras keeps them at 0 and 0.0).
  const Variable& iterations_variable() const { return iterations_; }
  const Variable& learning_rate_variable() const { return learning_rate_; }

 private:
  Variable scale_, counter_, iterations_, learning_rate_;
  int64_t growth_steps_ = kGrowthSteps;
};

}  // namespace troupe::nn
