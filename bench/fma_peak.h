// Register-only FMA throughput of one core: a loop of independent fused multiply-adds on
// vectors that never leave registers (no loads or stores), with enough accumulators to cover
// FMA latency × throughput. The GEMM benchmarks report their GFLOP/s as a fraction of it.
#pragma once

namespace troupe {
namespace bench {

// Best single-thread GFLOP/s (2 flops per lane per FMA) over 8, 12, 16 (and for AVX-512 24)
// accumulators. avx512: 16-lane zmm FMAs (0 when the CPU lacks AVX-512), else 8-lane ymm FMAs.
double FmaPeakGflops(bool avx512);

// CPU seconds this thread has run (CLOCK_THREAD_CPUTIME_ID): benchmark timings on a shared
// machine leave out the time other processes held the core.
double ThreadSeconds();

}  // namespace bench
}  // namespace troupe
