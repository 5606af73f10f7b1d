// Prints the core's register-only FMA peak (bench/fma_peak.h), single thread, for the AVX2
// (8-lane) and AVX-512 (16-lane) FMAs: the ceiling the GEMM benchmarks compare against.
#include <cstdio>

#include "bench/fma_peak.h"

int main() {
  const double avx2 = troupe::bench::FmaPeakGflops(false);
  const double avx512 = troupe::bench::FmaPeakGflops(true);
  std::printf("FMA peak, one core, float32: AVX2 %.1f GFLOP/s, AVX-512 %.1f GFLOP/s%s\n", avx2,
              avx512, avx512 == 0 ? " (no AVX-512 on this CPU)" : "");
  return 0;
}
