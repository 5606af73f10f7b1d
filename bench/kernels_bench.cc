// Google Benchmark for the CPU kernels at LeNet sizes (and ResNet-20's 3x3 convolutions):
// Conv2D forward and both backprops, MatMul (dense layers and their gradient products), plus a
// large SGEMM that measures the peak GFLOP/s Eigen reaches on this machine, and Conv2D written with
// Eigen::Tensor (extract_image_patches + contraction) to compare against Troupe's im2col + GEMM.
// Counters: GFLOPS (2 * multiply-adds per second / 1e9). bench/kernels_compare.py runs the same
// shapes in TensorFlow and prints the ratios.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <iterator>
#include <random>
#include <unsupported/Eigen/CXX11/Tensor>

#include "kernels/op_registry.h"

namespace troupe {
namespace {

using V = std::vector<int64_t>;

Tensor Random(TensorShape shape, uint32_t seed) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : t.flat<float>()) v = dist(gen);
  return t;
}

struct ConvShape {
  int64_t h, w, c, k, f;
  const char* padding;
  int64_t oh, ow;
  int64_t stride = 1;
};
// LeNet: conv1 28x28x1 * 5x5x6 SAME -> 28x28x6; conv2 14x14x6 * 5x5x16 VALID -> 10x10x16.
// ResNet-20 on Fashion-MNIST (28x28), 3x3 SAME: its three stages (16, 32, 64 channels).
const ConvShape kConv[] = {{28, 28, 1, 5, 6, "SAME", 28, 28},
                           {14, 14, 6, 5, 16, "VALID", 10, 10},
                           {28, 28, 16, 3, 16, "SAME", 28, 28},
                           {14, 14, 32, 3, 32, "SAME", 14, 14},
                           {7, 7, 64, 3, 64, "SAME", 7, 7},
                           // ResNet-50 (224x224): 1x1 64->256 and 3x3 64 at 56x56, 3x3 256 at
                           // 14x14, 1x1 2048->512 at 7x7, the strided 1x1 projection and the stem.
                           {56, 56, 64, 1, 256, "SAME", 56, 56},
                           {56, 56, 64, 3, 64, "SAME", 56, 56},
                           {14, 14, 256, 3, 256, "SAME", 14, 14},
                           {7, 7, 2048, 1, 512, "SAME", 7, 7},
                           {56, 56, 256, 1, 512, "SAME", 28, 28, 2},
                           {224, 224, 3, 7, 64, "SAME", 112, 112, 2},
                           // ResNet-20's stem and its strided convolutions and projections.
                           {28, 28, 1, 3, 16, "SAME", 28, 28},
                           {28, 28, 16, 3, 32, "SAME", 14, 14, 2},
                           {28, 28, 16, 1, 32, "SAME", 14, 14, 2},
                           {14, 14, 32, 3, 64, "SAME", 7, 7, 2},
                           {14, 14, 32, 1, 64, "SAME", 7, 7, 2},
                           // More of ResNet-50 (run at its batch of 32): the 3x3s of stages 2
                           // and 4, the 1x1 expansions/reductions of stages 2-4 and the strided
                           // 1x1s of the stage entries.
                           {28, 28, 128, 3, 128, "SAME", 28, 28},
                           {7, 7, 512, 3, 512, "SAME", 7, 7},
                           {14, 14, 256, 1, 1024, "SAME", 14, 14},
                           {14, 14, 1024, 1, 256, "SAME", 14, 14},
                           {7, 7, 512, 1, 2048, "SAME", 7, 7},
                           {28, 28, 512, 1, 128, "SAME", 28, 28},
                           {14, 14, 1024, 1, 2048, "SAME", 7, 7, 2},
                           {56, 56, 256, 1, 128, "SAME", 28, 28, 2}};

double ConvFlops(const ConvShape& s, int64_t n) {
  return 2.0 * static_cast<double>(n * s.oh * s.ow * s.f * s.k * s.k * s.c);
}

AttrMap ConvAttrs(const ConvShape& s) {
  return {{"strides", V{1, s.stride, s.stride, 1}}, {"padding", std::string(s.padding)}};
}

void SetFlops(benchmark::State& state, double flops) {
  state.counters["GFLOPS"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void Run(benchmark::State& state, const char* op, const std::vector<Tensor>& in,
         const AttrMap& attrs) {
  for (auto _ : state) {
    auto out = RunOp(op, in, attrs);
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize((*out)[0].raw_data());
  }
}

// Args: layer (0 = LeNet conv1, 1 = LeNet conv2, 2-4 = ResNet-20 stages, 5-10 and 16-23
// ResNet-50, 11-15 ResNet-20's stem and strided layers), batch.
void BM_Conv2D(benchmark::State& state) {
  const ConvShape& s = kConv[state.range(0)];
  const int64_t n = state.range(1);
  std::vector<Tensor> in = {Random({n, s.h, s.w, s.c}, 1), Random({s.k, s.k, s.c, s.f}, 2)};
  Run(state, "Conv2D", in, ConvAttrs(s));
  SetFlops(state, ConvFlops(s, n));
}

void BM_Conv2DBackpropInput(benchmark::State& state) {
  const ConvShape& s = kConv[state.range(0)];
  const int64_t n = state.range(1);
  std::vector<Tensor> in = {Random({s.k, s.k, s.c, s.f}, 2), Random({n, s.oh, s.ow, s.f}, 3)};
  AttrMap a = ConvAttrs(s);
  a.Set("input_sizes", V{n, s.h, s.w, s.c});
  Run(state, "Conv2DBackpropInput", in, a);
  SetFlops(state, ConvFlops(s, n));
}

void BM_Conv2DBackpropFilter(benchmark::State& state) {
  const ConvShape& s = kConv[state.range(0)];
  const int64_t n = state.range(1);
  std::vector<Tensor> in = {Random({n, s.h, s.w, s.c}, 1), Random({n, s.oh, s.ow, s.f}, 3)};
  AttrMap a = ConvAttrs(s);
  a.Set("filter_sizes", V{s.k, s.k, s.c, s.f});
  Run(state, "Conv2DBackpropFilter", in, a);
  SetFlops(state, ConvFlops(s, n));
}

// The same forward conv with Eigen::Tensor on Eigen's own thread pool (2 threads).
void BM_Conv2DEigenTensor(benchmark::State& state) {
  const ConvShape& s = kConv[state.range(0)];
  const int64_t n = state.range(1);
  Tensor x = Random({n, s.h, s.w, s.c}, 1), f = Random({s.k, s.k, s.c, s.f}, 2);
  Tensor y = *Tensor::Allocate(DType::kFloat32, {n, s.oh, s.ow, s.f});
  using T4 = Eigen::TensorMap<Eigen::Tensor<const float, 4, Eigen::RowMajor>>;
  T4 in(x.data<float>(), n, s.h, s.w, s.c);
  Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>> filt(f.data<float>(),
                                                                        s.k * s.k * s.c, s.f);
  Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>> out(y.data<float>(), n * s.oh * s.ow,
                                                                 s.f);
  Eigen::ThreadPool tp(2);
  Eigen::ThreadPoolDevice dev(&tp, 2);
  const auto pad = std::string(s.padding) == "SAME" ? Eigen::PADDING_SAME : Eigen::PADDING_VALID;
  Eigen::array<Eigen::IndexPair<int>, 1> dims = {Eigen::IndexPair<int>(1, 0)};
  Eigen::array<Eigen::Index, 2> patch_shape = {n * s.oh * s.ow, s.k * s.k * s.c};
  for (auto _ : state) {
    out.device(dev) = in.extract_image_patches(s.k, s.k, 1, 1, 1, 1, pad)
                          .reshape(patch_shape)
                          .contract(filt, dims);
    benchmark::DoNotOptimize(y.raw_data());
  }
  SetFlops(state, ConvFlops(s, n));
}

// Args: m, k, n, transpose_a, transpose_b (output m x n).
void BM_MatMul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool ta = state.range(3), tb = state.range(4);
  std::vector<Tensor> in = {Random(ta ? TensorShape{k, m} : TensorShape{m, k}, 1),
                            Random(tb ? TensorShape{n, k} : TensorShape{k, n}, 2)};
  Run(state, "MatMul", in, {{"transpose_a", ta}, {"transpose_b", tb}});
  SetFlops(state, 2.0 * static_cast<double>(m * k * n));
}

// transformer_lm's attention products, 12 sequences x 4 heads of 64 tokens x 32 wide: the
// forward's scores (q . k^T) and mix (p . v), and the backward's four (adj flags as
// graph/math_grad.cc differentiates them). Args: m, k, n, adj_x, adj_y.
void BM_AttentionBatchMatMul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool ax = state.range(3), ay = state.range(4);
  const int64_t b = 12 * 4;
  std::vector<Tensor> in = {Random(ax ? TensorShape{b, k, m} : TensorShape{b, m, k}, 1),
                            Random(ay ? TensorShape{b, n, k} : TensorShape{b, k, n}, 2)};
  Run(state, "BatchMatMulV2", in, {{"adj_x", ax}, {"adj_y", ay}});
  SetFlops(state, 2.0 * static_cast<double>(b * m * k * n));
}
BENCHMARK(BM_AttentionBatchMatMul)
    ->Args({64, 32, 64, 0, 1})  // scores = q . k^T
    ->Args({64, 64, 32, 0, 0})  // out = p . v
    ->Args({64, 32, 64, 0, 1})  // d p = d out . v^T
    ->Args({64, 64, 32, 1, 0})  // d v = p^T . d out
    ->Args({64, 64, 32, 0, 0})  // d q = d scores . k
    ->Args({64, 64, 32, 1, 0})  // d k = d scores^T . q
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// ResNet-50's stem pool, 3x3 stride 2 SAME on [batch, 112, 112, 64]: its gradient. Counter:
// GB/s of the input scanned once (each window reads 9 pixels; windows overlap).
void BM_MaxPoolGrad(benchmark::State& state) {
  const int64_t n = state.range(0);
  const AttrMap a{
      {"ksize", V{1, 3, 3, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("SAME")}};
  Tensor x = Random({n, 112, 112, 64}, 1);
  Tensor y = (*RunOp("MaxPool", std::vector<Tensor>{x}, a))[0];
  Run(state, "MaxPoolGrad", {x, y, Random(y.shape(), 2)}, a);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.byte_size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// Training-mode batch norm over ResNet-20's activations [batch, h, w, c] (args: h, c; batch
// 128), fused and as the op chain the unfused graph ran. Counter: GB/s of the fused op's
// minimal traffic (forward: x read 3 times + y written; backward: x, dy read twice + dx written;
// the Relu gradients recompute y's sign from x).
std::vector<Tensor> BnInputs(benchmark::State& state) {
  const int64_t h = state.range(0), c = state.range(1);
  return {Random({128, h, h, c}, 1), Random({c}, 2), Random({c}, 3), Random({128, h, h, c}, 4)};
}
void SetBytes(benchmark::State& state, const Tensor& x, double passes) {
  state.counters["GB/s"] = benchmark::Counter(passes * static_cast<double>(x.byte_size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
const AttrMap kBnAttrs{{"epsilon", 1e-3}};
void BM_FusedBatchNorm(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  Run(state, "FusedBatchNormTraining", {in[0], in[1], in[2]}, kBnAttrs);
  SetBytes(state, in[0], 4);
}
void BM_FusedBatchNormGrad(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  std::vector<Tensor> f =
      *RunOp("FusedBatchNormTraining", std::vector<Tensor>{in[0], in[1], in[2]}, kBnAttrs);
  Run(state, "FusedBatchNormTrainingGrad", {in[3], in[0], in[1], f[1], f[2]}, kBnAttrs);
  SetBytes(state, in[0], 5);
}
// The Relu variants: the Conv-BN-ReLU block's forward and backward in one op each.
void BM_FusedBatchNormRelu(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  Run(state, "FusedBatchNormReluTraining", {in[0], in[1], in[2]}, kBnAttrs);
  SetBytes(state, in[0], 4);
}
void BM_FusedBatchNormReluGrad(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  std::vector<Tensor> f =
      *RunOp("FusedBatchNormReluTraining", std::vector<Tensor>{in[0], in[1], in[2]}, kBnAttrs);
  Run(state, "FusedBatchNormReluTrainingGrad", {in[3], in[0], in[1], f[1], f[2], in[2]}, kBnAttrs);
  SetBytes(state, in[0], 5);
}
void BM_FusedBiasBatchNormReluGrad(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  std::vector<Tensor> f = *RunOp("FusedBiasBatchNormReluTraining",
                                 std::vector<Tensor>{in[0], in[1], in[2], in[2]}, kBnAttrs);
  Run(state, "FusedBiasBatchNormReluTrainingGrad", {in[3], in[0], in[1], f[1], f[2], in[2], in[2]},
      kBnAttrs);
  SetBytes(state, in[0], 5);
}
Tensor Op1(const char* op, std::vector<Tensor> in, const AttrMap& attrs = {}) {
  return (*RunOp(op, in, attrs))[0];
}
// The residual join: AddRelu against AddV2 then Relu, on [n, 28, 28, 16] (ResNet-20's first
// stack at batch n).
std::vector<Tensor> JoinInputs(benchmark::State& state) {
  const TensorShape s({state.range(0), 28, 28, 16});
  return {Random(s, 1), Random(s, 2)};
}
void BM_AddRelu(benchmark::State& state) {
  std::vector<Tensor> in = JoinInputs(state);
  Run(state, "AddRelu", {in[0], in[1]}, {});
  SetBytes(state, in[0], 3);
}
void BM_AddThenRelu(benchmark::State& state) {
  std::vector<Tensor> in = JoinInputs(state);
  for (auto _ : state) benchmark::DoNotOptimize(Op1("Relu", {Op1("AddV2", {in[0], in[1]})}));
  SetBytes(state, in[0], 5);
}
// The unfused forward: Mean, SquaredDifference, Mean, Rsqrt, Mul, Mul, Sub, Mul, Add.
void BM_UnfusedBatchNorm(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  const AttrMap axes{{"axis", V{0, 1, 2}}};
  Tensor eps = *Tensor::FromVector<float>({1e-3f}, TensorShape({}));
  for (auto _ : state) {
    Tensor mean = Op1("Mean", {in[0]}, axes);
    Tensor var = Op1("Mean", {Op1("SquaredDifference", {in[0], mean})}, axes);
    Tensor inv = Op1("Mul", {Op1("Rsqrt", {Op1("Add", {var, eps})}), in[1]});
    Tensor shift = Op1("Sub", {in[2], Op1("Mul", {mean, inv})});
    benchmark::DoNotOptimize(Op1("Add", {Op1("Mul", {in[0], inv}), shift}));
  }
  SetBytes(state, in[0], 4);
}
// The full-size ops autodiff of the unfused graph runs (its [C]-sized ops left out): dy*inv,
// Sum(dy*x), Sum(dy), the SquaredDifference gradient 2*(x-mean)*dvar, Mean's broadcast
// gradient, and the AddN of the three dx terms.
void BM_UnfusedBatchNormGrad(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  const AttrMap axes{{"axis", V{0, 1, 2}}};
  Tensor two = *Tensor::FromVector<float>({2.0f}, TensorShape({}));
  for (auto _ : state) {
    Tensor dx1 = Op1("Mul", {in[3], in[1]});
    Tensor dinv = Op1("Sum", {Op1("Mul", {in[3], in[0]})}, axes);
    Tensor dshift = Op1("Sum", {in[3]}, axes);
    Tensor dsq = Op1("BroadcastTo", {dshift}, {{"shape", in[0].shape().dims()}});
    Tensor dx2 = Op1("Mul", {Op1("Mul", {Op1("Sub", {in[0], in[2]}), two}), dsq});
    Tensor dx3 = Op1("BroadcastTo", {dinv}, {{"shape", in[0].shape().dims()}});
    benchmark::DoNotOptimize(Op1("AddN", {dx1, dx2, dx3}));
  }
  SetBytes(state, in[0], 5);
}
void BnArgs(benchmark::internal::Benchmark* b) {
  for (auto [h, c] : {std::pair{32, 16}, std::pair{16, 32}, std::pair{8, 64}}) b->Args({h, c});
}

// Softmax over the last dim at the transformer_lm's attention shape [12, 4, 64, 64], and its
// gradient: the fused SoftmaxGrad op against the Mul, Sum, Sub, Mul chain it replaces.
void BM_Softmax(benchmark::State& state) {
  Run(state, "Softmax", {Random({12, 4, 64, 64}, 1)}, {});
}
void BM_SoftmaxGrad(benchmark::State& state) {
  Tensor y = Op1("Softmax", {Random({12, 4, 64, 64}, 1)});
  Run(state, "SoftmaxGrad", {y, Random({12, 4, 64, 64}, 2)}, {});
}
void BM_UnfusedSoftmaxGrad(benchmark::State& state) {
  Tensor y = Op1("Softmax", {Random({12, 4, 64, 64}, 1)});
  Tensor dy = Random({12, 4, 64, 64}, 2);
  const AttrMap last{{"axis", V{-1}}, {"keep_dims", true}};
  for (auto _ : state) {
    Tensor sum = Op1("Sum", {Op1("Mul", {dy, y})}, last);
    benchmark::DoNotOptimize(Op1("Mul", {Op1("Sub", {dy, sum}), y}));
  }
}

void ConvArgs(benchmark::internal::Benchmark* b) {
  for (int layer : {0, 1}) {
    for (int batch : {8, 64}) b->Args({layer, batch});
  }
  for (int layer : {2, 3, 4, 11, 12, 13, 14, 15}) b->Args({layer, 128});
  // ResNet-20's stages at 8 images, whose tensors stay in L2: the kernels' compute alone, which
  // the batch of 128 (memory-bound on a busy machine) hides.
  for (int layer : {2, 3, 4}) b->Args({layer, 8});
}

// ResNet-50 layers (kConv[5..10]) at 8 images, and those of stages 2-4 (kConv[7, 8, 16..23])
// at the zoo's batch of 32, whose row blocks and thread shares differ; the Troupe kernels only.
void ResNet50ConvArgs(benchmark::internal::Benchmark* b) {
  for (int layer = 5; layer <= 10; ++layer) b->Args({layer, 8});
  for (int layer : {7, 8, 16, 17, 18, 19, 20, 21, 22, 23}) b->Args({layer, 32});
}

// ResNet-50's 3x3 convolutions and filter gradients (Winograd) at the small per-replica
// batches of many replicas (the 16-core "auto" layout gives 8 replicas 4 images each), where a
// call has few tiles per thread.
void ResNet50SmallBatchArgs(benchmark::internal::Benchmark* b) {
  for (int layer : {7, 16, 17}) {
    for (int batch : {1, 2, 4, 8, 16}) b->Args({layer, batch});
  }
}

void MatMulArgs(benchmark::internal::Benchmark* b) {
  for (int batch : {8, 64}) {
    for (auto [k, n] : {std::pair{400, 120}, std::pair{120, 84}, std::pair{84, 10}}) {
      b->Args({batch, k, n, 0, 0});  // forward   x[B,k] . w[k,n]
      b->Args({batch, n, k, 0, 1});  // d x     = dy[B,n] . w[k,n]^T
      b->Args({k, batch, n, 1, 0});  // d w     = x[B,k]^T . dy[B,n]
    }
  }
}

// transformer_lm's Dense products: 768 tokens, (in, out) widths of its layers.
void TransformerMatMulArgs(benchmark::internal::Benchmark* b) {
  for (auto [k, n] :
       {std::pair{128, 128}, std::pair{128, 512}, std::pair{512, 128}, std::pair{128, 256}}) {
    b->Args({768, k, n, 0, 0});
    b->Args({768, n, k, 0, 1});
    b->Args({k, 768, n, 1, 0});
  }
}

// Exact GELU on transformer_lm's MLP activations [12, 64, 512]: the fused ops and the chain
// nn::Gelu runs without them (forward; backward as graph/ differentiates that chain).
const TensorShape kGeluShape{12, 64, 512};
void BM_FusedGelu(benchmark::State& state) { Run(state, "FusedGelu", {Random(kGeluShape, 1)}, {}); }
void BM_FusedGeluGrad(benchmark::State& state) {
  Run(state, "FusedGeluGrad", {Random(kGeluShape, 2), Random(kGeluShape, 1)}, {});
}
void BM_UnfusedGelu(benchmark::State& state) {
  Tensor x = Random(kGeluShape, 1);
  Tensor c = Tensor::Scalar(0.7071067811865476f), half = Tensor::Scalar(0.5f);
  Tensor one = Tensor::Scalar(1.0f);
  for (auto _ : state) {
    Tensor e = Op1("Erf", {Op1("Mul", {Op1("Neg", {x}), c})});
    benchmark::DoNotOptimize(Op1("Mul", {Op1("Mul", {half, x}), Op1("Sub", {one, e})}));
  }
}
void BM_UnfusedGeluGrad(benchmark::State& state) {
  Tensor x = Random(kGeluShape, 1), dy = Random(kGeluShape, 2);
  Tensor c = Tensor::Scalar(0.7071067811865476f), half = Tensor::Scalar(0.5f);
  Tensor one = Tensor::Scalar(1.0f), k = Tensor::Scalar(1.1283791670955126f);
  for (auto _ : state) {
    Tensor z = Op1("Mul", {Op1("Neg", {x}), c});
    Tensor e = Op1("Erf", {z});
    Tensor dx1 = Op1("Mul", {Op1("Mul", {dy, Op1("Sub", {one, e})}), half});
    Tensor de = Op1("Neg", {Op1("Mul", {Op1("Mul", {half, x}), dy})});
    Tensor dz = Op1("Mul", {Op1("Mul", {de, k}), Op1("Exp", {Op1("Neg", {Op1("Square", {z})})})});
    benchmark::DoNotOptimize(Op1("AddN", {dx1, Op1("Neg", {Op1("Mul", {dz, c})})}));
  }
}

// Wall time drives the iteration count; "CPU" is the whole process's CPU time (all threads),
// which kernels_compare.py --cpu uses on a busy machine.
BENCHMARK(BM_Conv2D)->Apply(ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DEigenTensor)->Apply(ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DBackpropInput)->Apply(ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DBackpropFilter)->Apply(ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2D)->Apply(ResNet50ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DBackpropInput)->Apply(ResNet50ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DBackpropFilter)->Apply(ResNet50ConvArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2D)
    ->Apply(ResNet50SmallBatchArgs)
    ->Name("BM_Conv2DSmallBatch")
    ->UseRealTime()
    ->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DBackpropInput)
    ->Apply(ResNet50SmallBatchArgs)
    ->Name("BM_Conv2DBackpropInputSmallBatch")
    ->UseRealTime()
    ->MeasureProcessCPUTime();
BENCHMARK(BM_Conv2DBackpropFilter)
    ->Apply(ResNet50SmallBatchArgs)
    ->Name("BM_Conv2DBackpropFilterSmallBatch")
    ->UseRealTime()
    ->MeasureProcessCPUTime();
BENCHMARK(BM_MatMul)->Apply(MatMulArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_MaxPoolGrad)->Arg(8)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedBatchNorm)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_UnfusedBatchNorm)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedBatchNormGrad)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedBatchNormRelu)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedBatchNormReluGrad)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedBiasBatchNormReluGrad)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_AddRelu)->Arg(128)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_AddThenRelu)->Arg(128)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_UnfusedBatchNormGrad)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_MatMul)
    ->Apply(TransformerMatMulArgs)
    ->Name("BM_TransformerMatMul")
    ->UseRealTime()
    ->MeasureProcessCPUTime();
BENCHMARK(BM_FusedGelu)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_UnfusedGelu)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedGeluGrad)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_UnfusedGeluGrad)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_Softmax)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_SoftmaxGrad)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_UnfusedSoftmaxGrad)->UseRealTime()->MeasureProcessCPUTime();
// Peak: a large square SGEMM through the same MatMul kernel.
BENCHMARK(BM_MatMul)
    ->Args({1024, 1024, 1024, 0, 0})
    ->Name("BM_PeakSgemm")
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// ResNet-50's stem ZeroPadding2D, [n, 224, 224, 3] -> [n, 230, 230, 3], and its gradient (the
// Slice back). Counter: GB/s of the input read plus the output written.
void BM_PadStem(benchmark::State& state) {
  Tensor x = Random({state.range(0), 224, 224, 3}, 1);
  Run(state, "Pad", {x}, {{"paddings", V{0, 0, 3, 3, 3, 3, 0, 0}}});
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(x.byte_size()) * (1.0 + 230.0 * 230.0 / (224.0 * 224.0)) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate);
}
void BM_SliceStemGrad(benchmark::State& state) {
  Tensor dy = Random({state.range(0), 230, 230, 3}, 1);
  Run(state, "Slice", {dy}, {{"begin", V{0, 3, 3, 0}}, {"size", V{-1, 224, 224, -1}}});
}
BENCHMARK(BM_PadStem)->Arg(32)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_SliceStemGrad)->Arg(32)->UseRealTime()->MeasureProcessCPUTime();

// The memory floor for the elementwise kernels: Neg over 64M floats (256 MB in, 256 MB out), a
// streaming read + write on the kernel pool (TROUPE_NUM_THREADS). Counter: GB/s of bytes read
// plus bytes written, the unit in which the kernels' pass counts above are floors.
void BM_StreamReadWrite(benchmark::State& state) {
  Tensor x = Random({64 << 20}, 1);
  Run(state, "Neg", {x}, {});
  state.counters["GB/s"] = benchmark::Counter(2.0 * static_cast<double>(x.byte_size()) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StreamReadWrite)->UseRealTime()->MeasureProcessCPUTime();

// A residual block's end: FusedBiasBatchNormAddReluTraining against FusedBiasBatchNormTraining
// then AddRelu (the graph before the fusion), at BnArgs' [128, h, h, c] shapes. Counter, for
// both: GB/s of the fused op's 5 tensor passes (x three times, the shortcut, y), so the two
// compare as times; the separate ops make 8.
void BM_FusedBiasBatchNormAddRelu(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  Run(state, "FusedBiasBatchNormAddReluTraining", {in[0], in[1], in[2], in[2], in[3]}, kBnAttrs);
  SetBytes(state, in[0], 5);
}
void BM_FusedBiasBatchNormThenAddRelu(benchmark::State& state) {
  std::vector<Tensor> in = BnInputs(state);
  for (auto _ : state) {
    std::vector<Tensor> f = *RunOp("FusedBiasBatchNormTraining",
                                   std::vector<Tensor>{in[0], in[1], in[2], in[2]}, kBnAttrs);
    benchmark::DoNotOptimize(Op1("AddRelu", {f[0], in[3]}));
  }
  SetBytes(state, in[0], 5);
}
BENCHMARK(BM_FusedBiasBatchNormAddRelu)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_FusedBiasBatchNormThenAddRelu)->Apply(BnArgs)->UseRealTime()->MeasureProcessCPUTime();

// Every distinct convolution of ResNet-50 (224x224, batch 32) with how often a training step
// runs it: args (layer, op), op 0 = Conv2D, 1 = Conv2DBackpropInput, 2 = Conv2DBackpropFilter.
// Counter "count": calls per step, so time x count summed over all rows is a step's convolution
// time.
struct StepConv {
  ConvShape s;
  int count;
};
const StepConv kResNet50Step[] = {
    {{230, 230, 3, 7, 64, "VALID", 112, 112, 2}, 1},  // stem (no input gradient)
    {{56, 56, 64, 1, 64, "SAME", 56, 56}, 1},        {{56, 56, 64, 3, 64, "SAME", 56, 56}, 3},
    {{56, 56, 64, 1, 256, "SAME", 56, 56}, 4},       {{56, 56, 256, 1, 64, "SAME", 56, 56}, 2},
    {{56, 56, 256, 1, 128, "SAME", 28, 28, 2}, 1},   {{28, 28, 128, 3, 128, "SAME", 28, 28}, 4},
    {{28, 28, 128, 1, 512, "SAME", 28, 28}, 4},      {{56, 56, 256, 1, 512, "SAME", 28, 28, 2}, 1},
    {{28, 28, 512, 1, 128, "SAME", 28, 28}, 3},      {{28, 28, 512, 1, 256, "SAME", 14, 14, 2}, 1},
    {{14, 14, 256, 3, 256, "SAME", 14, 14}, 6},      {{14, 14, 256, 1, 1024, "SAME", 14, 14}, 6},
    {{28, 28, 512, 1, 1024, "SAME", 14, 14, 2}, 1},  {{14, 14, 1024, 1, 256, "SAME", 14, 14}, 5},
    {{14, 14, 1024, 1, 512, "SAME", 7, 7, 2}, 1},    {{7, 7, 512, 3, 512, "SAME", 7, 7}, 3},
    {{7, 7, 512, 1, 2048, "SAME", 7, 7}, 3},         {{14, 14, 1024, 1, 2048, "SAME", 7, 7, 2}, 1},
    {{7, 7, 2048, 1, 512, "SAME", 7, 7}, 2},
};
void BM_ResNet50StepConv(benchmark::State& state) {
  const StepConv& l = kResNet50Step[state.range(0)];
  const ConvShape& s = l.s;
  const int64_t n = 32;
  AttrMap a = ConvAttrs(s);
  Tensor x = Random({n, s.h, s.w, s.c}, 1), w = Random({s.k, s.k, s.c, s.f}, 2);
  Tensor dy = Random({n, s.oh, s.ow, s.f}, 3);
  switch (state.range(1)) {
    case 0:
      Run(state, "Conv2D", {x, w}, a);
      break;
    case 1:
      a.Set("input_sizes", V{n, s.h, s.w, s.c});
      Run(state, "Conv2DBackpropInput", {w, dy}, a);
      break;
    default:
      a.Set("filter_sizes", V{s.k, s.k, s.c, s.f});
      Run(state, "Conv2DBackpropFilter", {x, dy}, a);
  }
  SetFlops(state, ConvFlops(s, n));
  state.counters["count"] = l.count;
}
void ResNet50StepArgs(benchmark::internal::Benchmark* b) {
  for (int op = 0; op < 3; ++op) {
    for (int layer = 0; layer < static_cast<int>(std::size(kResNet50Step)); ++layer) {
      if (layer > 0 || op != 1) b->Args({layer, op});
    }
  }
}
BENCHMARK(BM_ResNet50StepConv)->Apply(ResNet50StepArgs)->UseRealTime()->MeasureProcessCPUTime();

}  // namespace
}  // namespace troupe

BENCHMARK_MAIN();
