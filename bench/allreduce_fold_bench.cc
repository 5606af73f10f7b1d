// Single-process collectives benchmarks (Google Benchmark): the fold kernel per dtype, and the
// in-process allreduce over 4 replicas next to a plain memcpy of the same bytes.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "collectives/in_process_communicator.h"
#include "collectives/reduce.h"

namespace troupe {
namespace {

void BM_Fold(benchmark::State& state, DType dtype) {
  const int64_t n = state.range(0);
  const int sources = 4;
  const size_t bytes = static_cast<size_t>(n) * DTypeSize(dtype);
  std::vector<std::vector<char>> in(sources, std::vector<char>(bytes, 0));
  std::vector<char> out(bytes);
  std::vector<const void*> srcs;
  for (auto& v : in) srcs.push_back(v.data());
  void* dst = out.data();
  for (auto _ : state) {
    FoldElements(dtype, ReduceOp::kSum, srcs.data(), sources, &dst, 1, n, 0);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * bytes * (sources + 1));
}
BENCHMARK_CAPTURE(BM_Fold, float32, DType::kFloat32)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Fold, float64, DType::kFloat64)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Fold, bfloat16, DType::kBFloat16)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Fold, half, DType::kHalf)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Fold, int32, DType::kInt32)->Arg(1 << 20);

void BM_InProcessAllReduce(benchmark::State& state) {
  const int replicas = 4;
  const int64_t n = state.range(0) / 4;
  auto comm = std::move(*InProcessCommunicator::Create(ProcessGroup::SingleProcess(replicas)));
  std::vector<Tensor> t;
  for (int r = 0; r < replicas; ++r) t.push_back(*Tensor::Zeros(DType::kFloat32, TensorShape{n}));
  for (auto _ : state) {
    if (!comm->AllReduce(t, ReduceOp::kSum)->Wait().ok()) state.SkipWithError("allreduce");
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));  // algbw
}
BENCHMARK(BM_InProcessAllReduce)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();

void BM_Memcpy(benchmark::State& state) {
  std::vector<char> a(static_cast<size_t>(state.range(0)), 1), b(a.size());
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Memcpy)->Arg(1 << 20)->Arg(64 << 20);

}  // namespace
}  // namespace troupe

BENCHMARK_MAIN();
