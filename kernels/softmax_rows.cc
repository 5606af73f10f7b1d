// See softmax_rows.h. Compiled with -ffp-contract=off (kernels/simd_math.h's requirement).
#include "kernels/softmax_rows.h"

#include "kernels/simd_math.h"

namespace troupe {
namespace kernels {
namespace {

// max over the row. The order never changes the value of a max; a NaN anywhere in the row
// makes every output NaN either way (through the max or through its own exp and the sum).
float RowMax(const float* x, int64_t c) {
  float m = x[0];
  int64_t j = 1;
#if TROUPE_SIMD_MATH_AVX2
  if (c >= 8) {
    __m256 v = _mm256_loadu_ps(x);
    for (j = 8; j + 8 <= c; j += 8) v = _mm256_max_ps(v, _mm256_loadu_ps(x + j));
    float lanes[8];
    _mm256_storeu_ps(lanes, v);
    for (float l : lanes) m = l > m ? l : m;
  }
#endif
  for (; j < c; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

}  // namespace

void SoftmaxRowF32(const float* x, float* y, int64_t c) {
  using S = simd_math::ScalarOps;
  const float m = RowMax(x, c);
  float lanes[8] = {};
  int64_t j = 0;
#if TROUPE_SIMD_MATH_AVX2
  using A = simd_math::Avx2Ops;
  __m256 acc = _mm256_setzero_ps();
  for (; j + 8 <= c; j += 8) {
    const __m256 e = simd_math::Exp<A>(_mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_set1_ps(m)));
    _mm256_storeu_ps(y + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  _mm256_storeu_ps(lanes, acc);
#else
  for (; j + 8 <= c; j += 8) {
    for (int l = 0; l < 8; ++l) {
      y[j + l] = simd_math::Exp<S>(x[j + l] - m);
      lanes[l] += y[j + l];
    }
  }
#endif
  for (int w = 4; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  }
  float sum = lanes[0];
  for (; j < c; ++j) {
    y[j] = simd_math::Exp<S>(x[j] - m);
    sum += y[j];
  }
  const float inv = 1.0f / sum;
  int64_t k = 0;
#if TROUPE_SIMD_MATH_AVX2
  for (; k + 8 <= c; k += 8) {
    _mm256_storeu_ps(y + k, _mm256_mul_ps(_mm256_loadu_ps(y + k), _mm256_set1_ps(inv)));
  }
#endif
  for (; k < c; ++k) y[k] *= inv;
}

}  // namespace kernels
}  // namespace troupe
