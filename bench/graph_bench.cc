// graph/ benchmarks (Google Benchmark). bench/graph_compare.py runs them next to TensorFlow.
//   BM_TracedTinyOps/1000: a traced Function of 1000 chained scalar AddV2 ops; the
//     "ns_per_op" counter is the per-op dispatch overhead (the adds themselves are ~1 ns).
//   BM_EagerTinyOps/1000: the same ops run eagerly, one by one.
//   BM_LeNetTrainStep/64: one traced LeNet-5 training step (forward, loss, gradients, Adam)
//     on a batch of 64 28x28x1 images, one replica.
#include <benchmark/benchmark.h>

#include "graph/function.h"
#include "graph/models/lenet.h"
#include "graph/ops.h"

namespace troupe {
namespace {

Value Chain(Value x, int64_t n) {
  Value one = ops::Scalar(1.0f);
  for (int64_t i = 0; i < n; ++i) x = ops::Add(x, one);
  return x;
}

// "ns_per_op": the measured time per iteration divided by the `n` ops each iteration runs.
void ReportNsPerOp(benchmark::State& state, int64_t n) {
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(n) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::kIs1000);
}

// Runs traced `f` (n ops) on a float scalar once to trace it, then once per iteration.
void TimeTraced(benchmark::State& state, Function& f, int64_t n) {
  Tensor x = Tensor::Scalar(0.0f);
  if (!f.Run1({x}).ok()) {
    state.SkipWithError("trace failed");
    return;
  }
  for (auto _ : state) {
    auto r = f.Run1({x});
    benchmark::DoNotOptimize(r);
  }
  ReportNsPerOp(state, n);
}

void BM_TracedTinyOps(benchmark::State& state) {
  const int64_t n = state.range(0);
  Function f("tiny_ops", [n](const Args& a) -> Outputs { return Chain(a[0], n); });
  TimeTraced(state, f, n);
}
BENCHMARK(BM_TracedTinyOps)->Arg(1000)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

// Executor overhead alone: 1000 chained Identity ops (the kernel forwards its input).
void BM_TracedIdentityOps(benchmark::State& state) {
  const int64_t n = state.range(0);
  Function f("identity_ops", [n](const Args& a) -> Outputs {
    Value x = a[0];
    for (int64_t i = 0; i < n; ++i) x = ops::Identity(x);
    return x;
  });
  TimeTraced(state, f, n);
}
BENCHMARK(BM_TracedIdentityOps)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_EagerTinyOps(benchmark::State& state) {
  const int64_t n = state.range(0);
  Value x(Tensor::Scalar(0.0f));
  for (auto _ : state) {
    Value y = Chain(x, n);
    benchmark::DoNotOptimize(y);
  }
  ReportNsPerOp(state, n);
}
BENCHMARK(BM_EagerTinyOps)->Arg(1000)->Unit(benchmark::kMicrosecond);

void BM_LeNetTrainStep(benchmark::State& state) {
  const int64_t batch = state.range(0);
  models::LeNet model;
  nn::Adam adam;
  Function step("train_step", [&](const Args& a) -> Outputs {
    return models::LeNetTrainStep(model, adam, a[0], a[1]);
  });
  Tensor x = *Tensor::Allocate(DType::kFloat32, {batch, 28, 28, 1});
  float v = 0.1f;
  for (float& e : x.flat<float>()) e = (v = v * 1.37f - static_cast<int>(v * 1.37f));
  Tensor y = *Tensor::Allocate(DType::kInt32, {batch});
  for (int64_t i = 0; i < batch; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  if (!step.Run1({x, y}).ok()) {
    state.SkipWithError("train step failed");
    return;
  }
  for (auto _ : state) {
    auto loss = step.Run1({x, y});
    benchmark::DoNotOptimize(loss);
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LeNetTrainStep)
    ->Arg(64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace troupe

BENCHMARK_MAIN();
