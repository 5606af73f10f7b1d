// bench/graph_ops_bench: every CPU kernel of one LeNet-5 training step (batch 64) with the
// shapes BM_LeNetTrainStep runs, eagerly and single-threaded (no pool), so a kernel's time is
// its own CPU time. For finding which kernel of the step to work on; the step itself is
// bench/graph_bench.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace {

using V = std::vector<int64_t>;

Tensor Rand(V shape, uint32_t seed) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape(shape));
  uint32_t s = seed * 2654435761u + 1;
  for (float& e : t.flat<float>()) {
    s = s * 1664525u + 1013904223u;
    e = static_cast<float>(s >> 8) / static_cast<float>(1 << 24) - 0.5f;
  }
  return t;
}

struct Case {
  std::string op;
  std::vector<Tensor> in;
  AttrMap attrs;
};

AttrMap Conv(const char* pad) {
  return {{"strides", V{1, 1, 1, 1}}, {"padding", std::string(pad)}};
}
AttrMap Pool() {
  return {{"ksize", V{1, 2, 2, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("VALID")}};
}

void Run(benchmark::State& state, const Case& c) {
  const OpDef* def = *OpRegistry::Global().LookupOp(c.op);
  const KernelFn* kernel = *OpRegistry::Global().LookupKernel(c.op, Device::Type::kCpu);
  (void)def;
  for (auto _ : state) {
    KernelContext ctx(c.op, c.in, c.attrs, Device::Cpu(), nullptr);
    Status s = (*kernel)(ctx);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(ctx);
  }
}

void RegisterAll() {
  const int64_t b = 64;
  Tensor x = Rand({b, 28, 28, 1}, 1), w1 = Rand({5, 5, 1, 6}, 2), y1 = Rand({b, 28, 28, 6}, 3);
  Tensor p1 = Rand({b, 14, 14, 6}, 4), w2 = Rand({5, 5, 6, 16}, 5), y2 = Rand({b, 10, 10, 16}, 6);
  Tensor p2 = Rand({b, 5, 5, 16}, 7), f0 = Rand({b, 400}, 8), d1 = Rand({400, 120}, 9);
  Tensor h1 = Rand({b, 120}, 10), d2 = Rand({120, 84}, 11), h2 = Rand({b, 84}, 12);
  Tensor d3 = Rand({84, 10}, 13), lg = Rand({b, 10}, 14);
  Tensor b1 = Rand({1, 1, 1, 6}, 15), b2 = Rand({1, 1, 1, 16}, 16), bd = Rand({120}, 17);
  Tensor labels = *Tensor::Allocate(DType::kInt32, TensorShape({b}));
  for (int64_t i = 0; i < b; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  AttrMap bf1 = Conv("SAME"), bf2 = Conv("VALID"), bi2 = Conv("VALID");
  bf1.Set("filter_sizes", V{5, 5, 1, 6});
  bf2.Set("filter_sizes", V{5, 5, 6, 16});
  bi2.Set("input_sizes", V{b, 14, 14, 6});
  AttrMap pg1 = Pool(), pg2 = Pool();
  pg1.Set("orig_input_shape", V{b, 28, 28, 6});
  pg2.Set("orig_input_shape", V{b, 10, 10, 16});
  AttrMap ta{{"transpose_a", true}}, tb{{"transpose_b", true}};
  std::vector<std::pair<std::string, Case>> cases = {
      {"conv1", {"Conv2D", {x, w1}, Conv("SAME")}},
      {"conv1_bias", {"AddV2", {y1, b1}, {}}},
      {"conv1_relu", {"Relu", {y1}, {}}},
      {"pool1", {"AvgPool", {y1}, Pool()}},
      {"conv2", {"Conv2D", {p1, w2}, Conv("VALID")}},
      {"conv2_bias", {"AddV2", {y2, b2}, {}}},
      {"conv2_relu", {"Relu", {y2}, {}}},
      {"pool2", {"AvgPool", {y2}, Pool()}},
      {"fc1", {"MatMul", {f0, d1}, {}}},
      {"fc1_bias", {"AddV2", {h1, bd}, {}}},
      {"fc2", {"MatMul", {h1, d2}, {}}},
      {"fc3", {"MatMul", {h2, d3}, {}}},
      {"xent", {"SparseSoftmaxCrossEntropyWithLogits", {lg, labels}, {}}},
      {"fc3_dx", {"MatMul", {lg, d3}, tb}},
      {"fc3_dw", {"MatMul", {h2, lg}, ta}},
      {"fc2_dx", {"MatMul", {h2, d2}, tb}},
      {"fc2_dw", {"MatMul", {h1, h2}, ta}},
      {"fc1_dx", {"MatMul", {h1, d1}, tb}},
      {"fc1_dw", {"MatMul", {f0, h1}, ta}},
      {"fc1_relu_grad", {"ReluGrad", {h1, h1}, {}}},
      {"fc1_bias_grad", {"SumToShapeOf", {h1, bd}, {}}},
      {"pool2_grad", {"AvgPoolGrad", {p2}, pg2}},
      {"conv2_relu_grad", {"ReluGrad", {y2, y2}, {}}},
      {"conv2_bias_grad", {"SumToShapeOf", {y2, b2}, {}}},
      {"conv2_dx", {"Conv2DBackpropInput", {w2, y2}, bi2}},
      {"conv2_dw", {"Conv2DBackpropFilter", {p1, y2}, bf2}},
      {"pool1_grad", {"AvgPoolGrad", {p1}, pg1}},
      {"conv1_relu_grad", {"ReluGrad", {y1, y1}, {}}},
      {"conv1_bias_grad", {"SumToShapeOf", {y1, b1}, {}}},
      {"conv1_dw", {"Conv2DBackpropFilter", {x, y1}, bf1}},
  };
  for (auto& [name, c] : cases) {
    benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& s) {
      Run(s, c);
    })->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  troupe::RegisterAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
