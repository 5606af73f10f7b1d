// The cost of dispatching kernels' work: one ParallelFor call over `blocks` blocks of about
// `work_ns` each, on a pool of `threads` threads (the caller included). With perfect scaling a
// call takes ceil(blocks / threads) * work_ns; what it takes beyond that is the pool's
// overhead, which small-op graphs (a transformer's LayerNorms, softmaxes and optimizer
// updates) pay on every op. Threads beyond the machine's cores measure contention, not scaling.
//   build/bench/thread_pool_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "core/thread_pool.h"

namespace {

uint64_t Chain(int64_t iters, uint64_t x) {
  for (int64_t i = 0; i < iters; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

// Dependent multiply-adds per nanosecond on this core, measured once.
double ItersPerNs() {
  static const double rate = [] {
    const int64_t iters = 20'000'000;
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(Chain(iters, 3));
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    return static_cast<double>(iters) / took.count();
  }();
  return rate;
}

// About `ns` of arithmetic that the compiler cannot drop or hoist.
void Work(int64_t ns, std::atomic<uint64_t>* sink) {
  const auto iters = static_cast<int64_t>(static_cast<double>(ns) * ItersPerNs());
  sink->fetch_add(Chain(iters, static_cast<uint64_t>(ns) | 1) & 1, std::memory_order_relaxed);
}

void BM_ParallelFor(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t blocks = state.range(1);
  const int64_t work_ns = state.range(2);
  troupe::ThreadPool pool(threads - 1, "bench");
  std::atomic<uint64_t> sink{0};
  ItersPerNs();
  for (auto _ : state) {
    pool.ParallelFor(blocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) Work(work_ns, &sink);
    });
  }
  const int64_t waves = (blocks + threads - 1) / threads;
  state.counters["ideal_us"] = static_cast<double>(waves * work_ns) / 1000.0;
  benchmark::DoNotOptimize(sink.load());
}

void Args(benchmark::internal::Benchmark* b) {
  for (int threads : {2, 4, 8, 16}) {
    for (int blocks : {2, 16, 64}) b->Args({threads, blocks, 1000});
    b->Args({threads, 16, 10000});
  }
}
BENCHMARK(BM_ParallelFor)->Apply(Args)->ArgNames({"threads", "blocks", "work_ns"})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
