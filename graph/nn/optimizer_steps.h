// The per-element update rules of the optimizers that have both a fused graph op
// (optimizer_ops.cc) and a host-pipeline form (Optimizer::UpdateHost): one definition each, so
// the two paths cannot drift. Each is Keras 3's float32 operation sequence; the bits do not
// depend on how [begin, end) is split across threads or on the vector width (the AVX2 body runs
// the scalar loop's IEEE operations in the same order, without FMA contraction).
#pragma once

#include <cstdint>

namespace troupe::nn {

// Keras' Adam step.
struct AdamStep {
  float alpha = 0;
  float one_minus_b1 = 0;
  float one_minus_b2 = 0;
  float eps = 0;

  // The coefficients of the update after `iterations` applied updates, in float32 as Keras
  // computes them: t = f32(iterations + 1), alpha = lr * sqrt(1 - b2^t) / (1 - b1^t).
  static AdamStep At(float lr, int64_t iterations, double beta_1, double beta_2, double epsilon);

  // On [begin, end): m += (g - m) * (1 - b1); v += (g * g - v) * (1 - b2);
  // w -= (m * alpha) / (sqrt(v) + eps).
  void Apply(float* w, float* m, float* v, const float* g, int64_t begin, int64_t end) const;
};

// Keras' SGD step.
struct SgdStep {
  float lr = 0;
  float momentum = 0;
  bool nesterov = false;

  // On [begin, end). Without a momentum slot (m == nullptr): w -= g * lr. With one:
  // m = m * momentum - g * lr; w += nesterov ? m * momentum - g * lr : m.
  void Apply(float* w, float* m, const float* g, int64_t begin, int64_t end) const;
};

}  // namespace troupe::nn
