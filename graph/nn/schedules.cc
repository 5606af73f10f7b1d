#include "graph/nn/schedules.h"

#include <algorithm>
#include <cmath>

namespace troupe::nn {
namespace {

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError("schedule." + field + ": " + what);
}

// CosineDecay._decay_function: from * ((1 - alpha) * 0.5 * (1 + cos(pi * step / steps)) + alpha).
float CosineDecayed(float step, float decay_steps, float from, double alpha) {
  const float fraction = step / decay_steps;
  const float pi = static_cast<float>(M_PI);
  const float cosine = 0.5f * (1.0f + std::cos(pi * fraction));
  const float decayed = static_cast<float>(1.0 - alpha) * cosine + static_cast<float>(alpha);
  return from * decayed;
}

}  // namespace

Status ValidateSchedule(const ScheduleConfig& s) {
  static const char* kinds[] = {"constant",    "cosine",       "piecewise",
                                "exponential", "inverse_time", "polynomial"};
  if (std::find(std::begin(kinds), std::end(kinds), s.kind) == std::end(kinds)) {
    return Bad("kind", "unknown schedule '" + s.kind +
                           "'; expected constant, cosine, piecewise, exponential, "
                           "inverse_time or polynomial");
  }
  if (s.kind == "constant") return Status::OK();
  if (s.kind == "piecewise") {
    if (s.boundaries.empty()) return Bad("boundaries", "piecewise needs at least one boundary");
    for (size_t i = 0; i < s.boundaries.size(); ++i) {
      if (s.boundaries[i] < 0) return Bad("boundaries", "steps must be >= 0");
      if (i > 0 && s.boundaries[i] <= s.boundaries[i - 1]) {
        return Bad("boundaries", "must be strictly increasing, got " +
                                     std::to_string(s.boundaries[i - 1]) + " then " +
                                     std::to_string(s.boundaries[i]));
      }
    }
    if (s.values.size() != s.boundaries.size() + 1) {
      return Bad("values", "needs one more entry than its sibling boundaries (" +
                               std::to_string(s.boundaries.size() + 1) + "), got " +
                               std::to_string(s.values.size()));
    }
    return Status::OK();
  }
  if (s.decay_steps <= 0) {
    return Bad("decay_steps",
               "must be > 0 for the " + s.kind + " schedule, got " + std::to_string(s.decay_steps));
  }
  if (s.kind == "cosine" && s.warmup_steps < 0) {
    return Bad("warmup_steps", "must be >= 0, got " + std::to_string(s.warmup_steps));
  }
  // Keras' CosineDecay ignores warmup_steps without a warmup_target: no warmup at all.
  if (s.kind == "cosine" && s.warmup_steps > 0 && !s.warmup_target) {
    return InvalidArgumentError("schedule.warmup_steps = " + std::to_string(s.warmup_steps) +
                                " needs schedule.warmup_target, the rate the warmup "
                                "climbs to (without it Keras' CosineDecay does no warmup); set "
                                "warmup_target or remove warmup_steps");
  }
  if ((s.kind == "exponential" || s.kind == "inverse_time") && !(s.decay_rate > 0)) {
    return Bad("decay_rate", "must be > 0 for the " + s.kind + " schedule");
  }
  return Status::OK();
}

bool SchedulesWarmup(const ScheduleConfig& s) {
  return s.kind == "cosine" && s.warmup_steps > 0 && s.warmup_target && *s.warmup_target > 0;
}

float ScheduleLearningRate(const ScheduleConfig& s, double initial, int64_t step) {
  const float init = static_cast<float>(initial);
  const float t = static_cast<float>(step);
  if (s.kind == "piecewise") {
    // Exactly one indicator is 1; the zero terms add exactly.
    size_t i = 0;
    while (i < s.boundaries.size() && step > s.boundaries[i]) ++i;
    return static_cast<float>(s.values[i]);
  }
  if (s.kind == "exponential" || s.kind == "inverse_time") {
    float p = t / static_cast<float>(s.decay_steps);
    if (s.staircase) p = std::floor(p);
    const float rate = static_cast<float>(s.decay_rate);
    if (s.kind == "exponential") return init * std::pow(rate, p);
    return init / (1.0f + rate * p);
  }
  if (s.kind == "polynomial") {
    const float end = static_cast<float>(s.end_learning_rate);
    float steps = static_cast<float>(s.decay_steps);
    float x = t;
    if (s.cycle) {
      const float multiplier = x == 0.0f ? 1.0f : std::ceil(x / steps);
      steps = steps * multiplier;
    } else {
      x = std::min(x, steps);
    }
    const float p = x / steps;
    return (init - end) * std::pow(1.0f - p, static_cast<float>(s.power)) + end;
  }
  if (s.kind == "cosine") {
    const float decay_steps = static_cast<float>(s.decay_steps);
    if (!s.warmup_target)
      return CosineDecayed(std::min(t, decay_steps), decay_steps, init, s.alpha);
    const float target = static_cast<float>(*s.warmup_target);
    const float warmup = static_cast<float>(s.warmup_steps);
    const float x = std::min(t, decay_steps + warmup);
    if (x < warmup) return (target - init) * (x / warmup) + init;
    return CosineDecayed(x - warmup, decay_steps, target, s.alpha);
  }
  return init;  // constant
}

}  // namespace troupe::nn
