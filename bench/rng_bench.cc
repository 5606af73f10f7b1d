// RNG throughput: 10^8 float32 normals and uniforms from a Philox Generator (what
// tf.random.Generator.normal/uniform run on CPU), with and without allocating the output, plus
// memset/memcpy of the same bytes as this machine's memory-bandwidth yardstick.
// bench/rng_compare.py runs this next to TensorFlow and prints the ratios.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "graph/random/generator.h"
#include "kernels/random/random_ops.h"

namespace troupe::random {
namespace {

constexpr int64_t kCount = 100'000'000;

void SetCounters(benchmark::State& state, int64_t bytes_written) {
  state.SetBytesProcessed(state.iterations() * bytes_written);
  state.counters["values_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kCount), benchmark::Counter::kIsRate);
}

// Generator.normal/uniform as a user calls them: a fresh output tensor every call.
void BM_GeneratorNormalF32(benchmark::State& state) {
  Generator g = *Generator::FromSeed(1);
  for (auto _ : state) {
    Result<Tensor> t = g.Normal(TensorShape{kCount});
    benchmark::DoNotOptimize(t->raw_data());
  }
  SetCounters(state, kCount * 4);
}
BENCHMARK(BM_GeneratorNormalF32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GeneratorUniformF32(benchmark::State& state) {
  Generator g = *Generator::FromSeed(1);
  for (auto _ : state) {
    Result<Tensor> t = g.Uniform(TensorShape{kCount});
    benchmark::DoNotOptimize(t->raw_data());
  }
  SetCounters(state, kCount * 4);
}
BENCHMARK(BM_GeneratorUniformF32)->Unit(benchmark::kMillisecond)->UseRealTime();

// The kernels alone, into a buffer that is reused (already paged in).
void BM_FillNormalF32(benchmark::State& state) {
  std::vector<float> out(kCount);
  RandomSpec spec{.dist = Distribution::kNormal, .dtype = DType::kFloat32, .key_counter = {}};
  for (auto _ : state) {
    (void)FillRandom(spec, TensorShape{kCount}, out.data());
    benchmark::DoNotOptimize(out.data());
    spec.key_counter.counter[0] += 256 * kCount;
  }
  SetCounters(state, kCount * 4);
}
BENCHMARK(BM_FillNormalF32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FillUniformF32(benchmark::State& state) {
  std::vector<float> out(kCount);
  RandomSpec spec{.dist = Distribution::kUniform, .dtype = DType::kFloat32, .key_counter = {}};
  for (auto _ : state) {
    (void)FillRandom(spec, TensorShape{kCount}, out.data());
    benchmark::DoNotOptimize(out.data());
    spec.key_counter.counter[0] += 256 * kCount;
  }
  SetCounters(state, kCount * 4);
}
BENCHMARK(BM_FillUniformF32)->Unit(benchmark::kMillisecond)->UseRealTime();

// Memory-bandwidth yardsticks over the same 400 MB, split across the same threads.
void BM_Memset(benchmark::State& state) {
  std::vector<float> out(kCount);
  ThreadPool* pool = ThreadPool::Default();
  for (auto _ : state) {
    pool->ParallelFor(kCount, kCount / (4 * (pool->num_threads() + 1)), [&](int64_t b, int64_t e) {
      std::memset(out.data() + b, static_cast<int>(state.iterations() & 1), (e - b) * 4);
    });
    benchmark::DoNotOptimize(out.data());
  }
  SetCounters(state, kCount * 4);
}
BENCHMARK(BM_Memset)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Memcpy(benchmark::State& state) {
  std::vector<float> in(kCount, 1.0f), out(kCount);
  ThreadPool* pool = ThreadPool::Default();
  for (auto _ : state) {
    pool->ParallelFor(kCount, kCount / (4 * (pool->num_threads() + 1)), [&](int64_t b, int64_t e) {
      std::memcpy(out.data() + b, in.data() + b, (e - b) * 4);
    });
    benchmark::DoNotOptimize(out.data());
  }
  SetCounters(state, kCount * 4);  // bytes written (it also reads as many)
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace troupe::random

BENCHMARK_MAIN();
