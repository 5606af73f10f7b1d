// Keras layers traced on gpu:0 against the same layers on the CPU (label gpu; skipped without
// a GPU): for the layers whose ops all have GPU kernels, a traced training-mode call with its
// gradient (of sum(out * cot) w.r.t. the input and the trainable weights) agrees within 1e-5
// of each tensor's scale, and BatchNormalization's moving statistics too; likewise Embedding
// (int32 ids with repeats and a negative id: GatherV2 and UnsortedSegmentSum) and causal
// self-attention (BatchMatMulV2), whose traced GPU calls use no CPU-only fused ops.
// DepthwiseConv2D and dilated Conv2D need CPU-only kernels (kernels/OPS.md). Without a GPU
// only the traced CPU calls run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/gpu.h"
#include "graph/function.h"
#include "graph/keras/layer_factory.h"
#include "graph/ops.h"
#include "graph/tape.h"

namespace troupe::keras {
namespace {

using json = nlohmann::json;

Tensor Random(const TensorShape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (float& x : v) x = d(gen);
  return *Tensor::FromVector(v, shape);
}

// Ids in [-1, vocab) with repeats (Keras wraps -1 to vocab - 1).
Tensor Ids(const TensorShape& shape, int64_t vocab, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> d(-1, static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> v(static_cast<size_t>(shape.num_elements()));
  for (int32_t& x : v) x = d(gen);
  return *Tensor::FromVector(v, shape);
}

json Layer(const std::string& cls, json config) {
  config["name"] = "layer";
  return {{"module", "keras.layers"}, {"class_name", cls}, {"config", config}};
}

// How a case calls its layer: on x alone, or as self-attention (query = value = x).
struct Call {
  bool self_attention = false;
  bool causal = false;
};

// Output, input gradient (float inputs only), weight gradients and every weight after one traced
// call on `device`.
Result<std::vector<Tensor>> RunOn(const json& envelope, const Tensor& x, const Tensor& cot,
                                  Device device, Call call = {}) {
  auto inputs = [&](const Value& in) {
    return call.self_attention ? std::vector<Value>{in, in} : std::vector<Value>{in};
  };
  const bool float_input = x.dtype() == DType::kFloat32;
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<KerasLayer> layer, MakeKerasLayer(envelope, 3));
  TROUPE_RETURN_IF_ERROR(layer->Apply(inputs(Value(x)), {}).status());  // builds on the CPU
  std::vector<Variable> weights, trainable;
  uint32_t seed = 10;
  for (auto& [name, v] : layer->KerasWeights()) {
    Tensor w = Random(v.shape(), seed++);
    if (name == "moving_variance") {
      for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] = 1.0f + 0.1f * i;
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor placed, gpu::CopyTo(w, device));
    TROUPE_RETURN_IF_ERROR(v.SetValue(placed));
    weights.push_back(v);
    if (v.trainable()) trainable.push_back(v);
  }
  FunctionOptions options;
  options.device = device;
  Function f(
      "layer_step",
      [&](const Args& a) -> Outputs {
        GradientTape tape(/*persistent=*/true);
        Value in = a[0].value();
        if (float_input) tape.Watch(in);
        Value out = layer->Apply(inputs(in), {.training = true, .use_causal_mask = call.causal});
        Value target = ops::Sum(ops::Mul(out, a[1].value()));
        std::vector<Value> outs = {out};
        if (float_input) {
          auto grads = tape.Gradient(target, std::vector<Value>{in});
          if (!grads.ok()) return grads.status();
          outs.push_back((*grads)[0]);
        }
        auto wgrads = tape.Gradient(target, trainable);
        if (!wgrads.ok()) return wgrads.status();
        outs.insert(outs.end(), wgrads->begin(), wgrads->end());
        return outs;
      },
      options);
  TROUPE_ASSIGN_OR_RETURN(Tensor xd, gpu::CopyTo(x, device));
  TROUPE_ASSIGN_OR_RETURN(Tensor cd, gpu::CopyTo(cot, device));
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> outs, f.Run({xd, cd}));
  for (const Variable& v : weights) outs.push_back(v.value());
  for (Tensor& t : outs) {
    TROUPE_ASSIGN_OR_RETURN(t, gpu::ToHost(t));
  }
  return outs;
}

float Scale(const Tensor& t) {
  float scale = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    scale = std::max(scale, std::fabs(t.data<float>()[i]));
  return scale;
}

// Within 1e-5 of the tensor's scale (at least `min_scale`).
void ExpectClose(const Tensor& gpu, const Tensor& cpu, const std::string& what,
                 float min_scale = 0) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  float scale = min_scale, worst = 0;
  for (int64_t i = 0; i < cpu.num_elements(); ++i) {
    scale = std::max(scale, std::fabs(cpu.data<float>()[i]));
    worst = std::max(worst, std::fabs(gpu.data<float>()[i] - cpu.data<float>()[i]));
  }
  EXPECT_LE(worst, 1e-5f * scale) << what << ": max|gpu - cpu| " << worst << ", scale " << scale;
}

TEST(KerasLayersGpu, TracedTrainingCallsMatchTheCpu) {
  const bool have_gpu = gpu::DeviceCount() > 0;
  struct Case {
    std::string what;
    json envelope;
    TensorShape input;
    Call call = {};
    int64_t vocab = 0;  // > 0: the input is int32 ids in [-1, vocab)
    // A result that is zero in exact arithmetic (so rounding noise on both devices): judged
    // against the largest scale of the case's results instead of its own.
    int noise_result = -1;
  };
  const std::vector<Case> cases = {
      {"dense rank 3 gelu", Layer("Dense", {{"units", 5}, {"activation", "gelu"}}), {2, 3, 4}},
      {"conv2d same relu",
       Layer("Conv2D", {{"filters", 4},
                        {"kernel_size", {3, 3}},
                        {"padding", "same"},
                        {"strides", {2, 2}},
                        {"activation", "relu"}}),
       {2, 7, 7, 3}},
      {"batch norm", Layer("BatchNormalization", {{"momentum", 0.9}}), {4, 3, 3, 5}},
      {"layer norm", Layer("LayerNormalization", json::object()), {3, 4, 6}},
      {"avg pool same",
       Layer("AveragePooling2D", {{"pool_size", {3, 3}}, {"strides", {2, 2}}, {"padding", "same"}}),
       {2, 7, 7, 3}},
      {"max pool", Layer("MaxPooling2D", json::object()), {2, 6, 6, 3}},
      {"gap", Layer("GlobalAveragePooling2D", json::object()), {2, 4, 5, 3}},
      {"silu", Layer("Activation", {{"activation", "silu"}}), {4, 6}},
      {"elu", Layer("ELU", {{"alpha", 0.5}}), {4, 6}},
      {"leaky relu", Layer("LeakyReLU", json::object()), {4, 6}},
      {"relu6", Layer("ReLU", {{"max_value", 6.0}}), {4, 6}},
      {"softmax", Layer("Softmax", json::object()), {4, 6}},
      {"embedding", Layer("Embedding", {{"input_dim", 10}, {"output_dim", 8}}), {3, 16}, {}, 10},
      {"causal self-attention",
       Layer("MultiHeadAttention", {{"num_heads", 4}, {"key_dim", 8}}),
       {2, 12, 16},
       {.self_attention = true, .causal = true},
       0,
       5},  // the key bias gradient: softmax ignores a constant added to a row of logits
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Tensor x = c.vocab > 0 ? Ids(c.input, c.vocab, seed++) : Random(c.input, seed++);
    Result<std::unique_ptr<KerasLayer>> probe = MakeKerasLayer(c.envelope, 3);
    ASSERT_TRUE(probe.ok()) << c.what << ": " << probe.status();
    Value y = c.call.self_attention ? (*probe)->Apply({Value(x), Value(x)}, {})
                                    : (*probe)->Apply({Value(x)}, {});
    ASSERT_TRUE(y.ok()) << c.what << ": " << y.status();
    Tensor cot = Random(y.shape(), seed++);
    Result<std::vector<Tensor>> cpu = RunOn(c.envelope, x, cot, Device::Cpu(), c.call);
    ASSERT_TRUE(cpu.ok()) << c.what << ": " << cpu.status();
    if (!have_gpu) continue;  // the traced CPU call alone
    Result<std::vector<Tensor>> gpu = RunOn(c.envelope, x, cot, Device::Gpu(0), c.call);
    if (!gpu.ok()) {  // report it and go on: each case names its own missing kernel
      ADD_FAILURE() << c.what << " on gpu:0: " << gpu.status();
      continue;
    }
    ASSERT_EQ(gpu->size(), cpu->size()) << c.what;
    for (size_t i = 0; i < cpu->size(); ++i) {
      float floor = 0;
      if (static_cast<int>(i) == c.noise_result) {
        for (const Tensor& t : *cpu) floor = std::max(floor, Scale(t));
      }
      ExpectClose((*gpu)[i], (*cpu)[i], c.what + " result " + std::to_string(i), floor);
    }
  }
  if (!have_gpu) GTEST_SKIP() << "no GPU visible (the traced CPU calls ran)";
}

}  // namespace
}  // namespace troupe::keras
