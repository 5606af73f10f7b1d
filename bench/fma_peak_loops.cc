// The FMA loops behind bench/fma_peak.h: each variant is compiled for its own target (AVX2+FMA
// or AVX-512), and only called after the CPU was checked.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <ctime>

#include "bench/fma_peak.h"

namespace troupe {
namespace bench {
namespace {

constexpr int64_t kIters = int64_t{1} << 18;

// The accumulators converge to y / (1 - x): finite, normal values whatever the iteration count.
template <int N>
__attribute__((target("avx2,fma"))) float LoopAvx2(int64_t iters) {
  __m256 acc[N];
#pragma GCC unroll 32
  for (int j = 0; j < N; ++j) acc[j] = _mm256_set1_ps(float(j));
  const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 32
    for (int j = 0; j < N; ++j) acc[j] = _mm256_fmadd_ps(acc[j], x, y);
  }
  float s = 0;
  for (int j = 0; j < N; ++j) s += acc[j][0];
  return s;
}

template <int N>
__attribute__((target("avx512f"))) float LoopAvx512(int64_t iters) {
  __m512 acc[N];
#pragma GCC unroll 32
  for (int j = 0; j < N; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-3f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 32
    for (int j = 0; j < N; ++j) acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  }
  float s = 0;
  for (int j = 0; j < N; ++j) s += acc[j][0];
  return s;
}

volatile float g_sink;

}  // namespace

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

namespace {

// GFLOP/s of loop(iters) with `accumulators` vectors of `lanes` floats: best of 20 short runs
// on this thread's CPU clock (time other processes take on a shared machine does not count).
template <typename Loop>
double Time(Loop loop, int accumulators, int lanes) {
  double best = 0;
  for (int rep = 0; rep < 20; ++rep) {
    const double t0 = ThreadSeconds();
    g_sink = loop(kIters);
    const double s = ThreadSeconds() - t0;
    best = std::max(best, 2.0 * double(kIters) * accumulators * lanes / s * 1e-9);
  }
  return best;
}

}  // namespace

double FmaPeakGflops(bool avx512) {
  if (avx512) {
    if (!__builtin_cpu_supports("avx512f")) return 0;
    return std::max({Time(LoopAvx512<8>, 8, 16), Time(LoopAvx512<12>, 12, 16),
                     Time(LoopAvx512<16>, 16, 16), Time(LoopAvx512<24>, 24, 16)});
  }
  return std::max({Time(LoopAvx2<8>, 8, 8), Time(LoopAvx2<12>, 12, 8), Time(LoopAvx2<16>, 16, 8)});
}

}  // namespace bench
}  // namespace troupe
