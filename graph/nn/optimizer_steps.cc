// Compiled with -ffp-contract=off (graph/CMakeLists.txt): every product is rounded before it is
// added, as Keras' separate float32 ops round it.
#include "graph/nn/optimizer_steps.h"

#include <cmath>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace troupe::nn {

AdamStep AdamStep::At(float lr, int64_t iterations, double beta_1, double beta_2, double epsilon) {
  const float t = static_cast<float>(iterations + 1);
  const float b1_power = std::pow(static_cast<float>(beta_1), t);
  const float b2_power = std::pow(static_cast<float>(beta_2), t);
  AdamStep s;
  s.alpha = lr * std::sqrt(1.0f - b2_power) / (1.0f - b1_power);
  s.one_minus_b1 = static_cast<float>(1.0 - beta_1);
  s.one_minus_b2 = static_cast<float>(1.0 - beta_2);
  s.eps = static_cast<float>(epsilon);
  return s;
}

// The 8-lane body runs the same IEEE operations in the same order as the scalar tail, so the
// bits are those of the scalar loop; GCC -O2 leaves that loop scalar (sqrt and divide one float
// at a time).
void AdamStep::Apply(float* w, float* m, float* v, const float* g, int64_t begin,
                     int64_t end) const {
  int64_t i = begin;
#if defined(__AVX2__)
  const __m256 b1 = _mm256_set1_ps(one_minus_b1), b2 = _mm256_set1_ps(one_minus_b2);
  const __m256 va = _mm256_set1_ps(alpha), ve = _mm256_set1_ps(eps);
  for (; i + 8 <= end; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    __m256 mi = _mm256_loadu_ps(m + i), vi = _mm256_loadu_ps(v + i);
    mi = _mm256_add_ps(mi, _mm256_mul_ps(_mm256_sub_ps(gi, mi), b1));
    vi = _mm256_add_ps(vi, _mm256_mul_ps(_mm256_sub_ps(_mm256_mul_ps(gi, gi), vi), b2));
    const __m256 step = _mm256_div_ps(_mm256_mul_ps(mi, va), _mm256_add_ps(_mm256_sqrt_ps(vi), ve));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(w + i, _mm256_sub_ps(_mm256_loadu_ps(w + i), step));
  }
#endif
  for (; i < end; ++i) {
    m[i] = m[i] + (g[i] - m[i]) * one_minus_b1;
    v[i] = v[i] + (g[i] * g[i] - v[i]) * one_minus_b2;
    w[i] = w[i] - (m[i] * alpha) / (std::sqrt(v[i]) + eps);
  }
}

void SgdStep::Apply(float* w, float* m, const float* g, int64_t begin, int64_t end) const {
  if (m == nullptr) {
    for (int64_t i = begin; i < end; ++i) w[i] = w[i] - g[i] * lr;
    return;
  }
  for (int64_t i = begin; i < end; ++i) {
    m[i] = m[i] * momentum - g[i] * lr;
    w[i] = nesterov ? w[i] + (m[i] * momentum - g[i] * lr) : w[i] + m[i];
  }
}

}  // namespace troupe::nn
