// Keras 3 learning-rate schedules (keras/src/optimizers/schedules/learning_rate_schedule.py),
// evaluated in float32 exactly as the TensorFlow backend does: the step is cast to float32
// (exact up to 2^24), Python constants are rounded to float32 where Keras converts them, and
// pow/cos are the float32 library functions TF's scalar kernels call.
//
// A schedule replaces the optimizer's learning_rate variable (Keras has none then); its value
// at each update is computed from the optimizer's iteration counter, read before the
// increment, and never stored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace troupe::nn {

struct ScheduleConfig {
  // constant | cosine | piecewise | exponential | inverse_time | polynomial
  std::string kind = "constant";
  // cosine (CosineDecay): decay_steps > 0, alpha, optional linear warmup from the initial
  // learning rate to warmup_target over warmup_steps.
  int64_t warmup_steps = 0;
  std::optional<double> warmup_target;
  int64_t decay_steps = 1000;  // cosine, exponential, inverse_time, polynomial: > 0
  double alpha = 0.0;
  // piecewise (PiecewiseConstantDecay): strictly increasing boundaries, values one longer;
  // values[i] applies while boundaries[i-1] < step <= boundaries[i].
  std::vector<int64_t> boundaries;
  std::vector<double> values;
  // exponential (ExponentialDecay), inverse_time (InverseTimeDecay).
  double decay_rate = 0.0;
  bool staircase = false;
  // polynomial (PolynomialDecay).
  double end_learning_rate = 0.0001;
  double power = 1.0;
  bool cycle = false;
};

// InvalidArgument naming the key relative to the optimizer table (schedule.<field>) when `schedule`
// is not one Keras would construct, or one whose keys Keras would silently ignore (cosine
// warmup_steps > 0 without a warmup_target).
Status ValidateSchedule(const ScheduleConfig& schedule);

// Whether the schedule climbs from the initial learning rate to a warmup target (cosine with
// warmup_steps > 0 and warmup_target > 0): the one recipe where an initial rate of 0 trains.
bool SchedulesWarmup(const ScheduleConfig& schedule);

// The learning rate at `step` for initial learning rate `initial` (ignored by piecewise).
// "constant" is f32(initial).
float ScheduleLearningRate(const ScheduleConfig& schedule, double initial, int64_t step);

}  // namespace troupe::nn
