// The GPU optimizer updates (kernels/cuda/optimizer_updates.cu, reached through graph/nn's
// fused update ops when a variable lives on a GPU) give the same bits as the CPU updates:
// Adam and SGD with and without (Nesterov) momentum, several steps, odd sizes.
#include <gtest/gtest.h>

#include <random>

#include "core/gpu.h"
#include "graph/nn/optimizers.h"
#include "graph/variable.h"

namespace troupe {
namespace {

Tensor RandomTensor(TensorShape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (float& x : v) x = d(gen);
  return *Tensor::FromVector(v, shape);
}

// Runs `steps` updates of a fresh optimizer on CPU variables and on gpu:0 variables with the
// same gradients; every weight and slot must be bit-equal afterwards.
void ExpectSameBits(const std::function<std::unique_ptr<nn::Optimizer>()>& make, int steps) {
  const std::vector<TensorShape> shapes = {{5, 5, 1, 6}, {6}, {1000003}, {1}};
  std::vector<Variable> cpu, gpu_vars;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor init = RandomTensor(shapes[i], static_cast<uint32_t>(i));
    cpu.push_back(*Variable::Create(Value(init.DeepCopy()), "w" + std::to_string(i)));
    gpu_vars.push_back(*Variable::Create(Value(init.DeepCopy()), "w" + std::to_string(i)));
  }
  auto cpu_opt = make(), gpu_opt = make();
  ASSERT_TRUE(cpu_opt->Build(cpu).ok());
  ASSERT_TRUE(gpu_opt->Build(gpu_vars).ok());
  ASSERT_TRUE(nn::PlaceWeightsAndSlots(gpu_vars, *gpu_opt, Device::Gpu(0)).ok());
  for (int s = 0; s < steps; ++s) {
    std::vector<Value> grads_cpu, grads_gpu;
    for (size_t i = 0; i < shapes.size(); ++i) {
      Tensor g = RandomTensor(shapes[i], static_cast<uint32_t>(100 + 10 * s + i));
      grads_cpu.push_back(Value(g));
      grads_gpu.push_back(Value(*gpu::CopyTo(g, Device::Gpu(0))));
    }
    ASSERT_TRUE(cpu_opt->ApplyGradients(grads_cpu, cpu).ok());
    Status st = gpu_opt->ApplyGradients(grads_gpu, gpu_vars);
    ASSERT_TRUE(st.ok()) << st;
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(gpu_vars[i].value().device(), Device::Gpu(0));
    Tensor back = *gpu::ToHost(gpu_vars[i].value());
    EXPECT_TRUE(back.BitEqual(cpu[i].value())) << "weight " << i << " differs";
    std::vector<Variable> cs = cpu_opt->Slots(cpu[i]), gs = gpu_opt->Slots(gpu_vars[i]);
    ASSERT_EQ(cs.size(), gs.size());
    for (size_t k = 0; k < cs.size(); ++k) {
      EXPECT_TRUE(gpu::ToHost(gs[k].value())->BitEqual(cs[k].value()))
          << "slot " << k << " of weight " << i << " differs";
    }
  }
}

#define SKIP_WITHOUT_GPU() \
  if (gpu::DeviceCount() == 0) GTEST_SKIP() << "no GPU visible"

TEST(GpuOptimizer, AdamBitEqualToCpu) {
  SKIP_WITHOUT_GPU();
  ExpectSameBits(
      [] {
        return std::make_unique<nn::Adam>(nn::AdamOptions{1e-3, 0.9, 0.999, 1e-7});
      },
      5);
}

TEST(GpuOptimizer, SgdBitEqualToCpu) {
  SKIP_WITHOUT_GPU();
  ExpectSameBits([] { return std::make_unique<nn::SGD>(nn::SgdOptions{0.01, 0.0, false}); }, 3);
  ExpectSameBits([] { return std::make_unique<nn::SGD>(nn::SgdOptions{0.01, 0.9, false}); }, 3);
  ExpectSameBits([] { return std::make_unique<nn::SGD>(nn::SgdOptions{0.01, 0.9, true}); }, 3);
}

}  // namespace
}  // namespace troupe
