// Helpers for GPU kernel tests: skip without a GPU, run an op on the CPU and on gpu:0 with the
// same inputs, and compare the results elementwise at a relative tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/tensor.h"
#include "kernels/op_registry.h"

namespace troupe::gpu_testing {

#define TROUPE_SKIP_WITHOUT_GPU()                                            \
  do {                                                                       \
    if (::troupe::gpu::DeviceCount() == 0) GTEST_SKIP() << "no GPU visible"; \
  } while (0)

struct BothResults {
  std::vector<Tensor> cpu, gpu;  // gpu results already copied back to the host
};

// Runs `op` eagerly on cpu:0 and gpu:0. Inputs are host tensors; they are copied to the GPU.
inline Result<BothResults> RunOnBoth(const std::string& op, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs = {}) {
  BothResults r;
  TROUPE_ASSIGN_OR_RETURN(r.cpu, RunOp(op, inputs, attrs, Device::Cpu()));
  std::vector<Tensor> dev_inputs;
  for (const Tensor& t : inputs) {
    TROUPE_ASSIGN_OR_RETURN(Tensor d, gpu::CopyTo(t, Device::Gpu(0)));
    dev_inputs.push_back(d);
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp(op, dev_inputs, attrs, Device::Gpu(0)));
  for (const Tensor& t : out) {
    if (t.device() != Device::Gpu(0)) {
      return InternalError(op + ": GPU kernel returned a tensor on " + t.device().ToString());
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor h, gpu::ToHost(t));
    r.gpu.push_back(h);
  }
  TROUPE_RETURN_IF_ERROR(gpu::CheckLastError(0, op));
  return r;
}

// |gpu - cpu| <= rel * max(|cpu|, 1e-3 * scale) elementwise, where scale is the largest |cpu|
// value (so near-zero entries of a sum are judged against the sum's magnitude).
inline ::testing::AssertionResult AllClose(const Tensor& cpu, const Tensor& gpu, double rel) {
  if (cpu.dtype() != gpu.dtype() || cpu.shape() != gpu.shape()) {
    return ::testing::AssertionFailure()
           << "spec differs: cpu " << cpu.DebugString() << " gpu " << gpu.DebugString();
  }
  auto get = [](const Tensor& t, int64_t i) -> double {
    switch (t.dtype()) {
      case DType::kFloat32:
        return t.data<float>()[i];
      case DType::kFloat64:
        return t.data<double>()[i];
      case DType::kInt32:
        return t.data<int32_t>()[i];
      case DType::kInt64:
        return static_cast<double>(t.data<int64_t>()[i]);
      case DType::kBool:
        return t.data<bool>()[i] ? 1 : 0;
      default:
        return NAN;
    }
  };
  double scale = 0;
  for (int64_t i = 0; i < cpu.num_elements(); ++i) scale = std::max(scale, std::abs(get(cpu, i)));
  for (int64_t i = 0; i < cpu.num_elements(); ++i) {
    double a = get(cpu, i), b = get(gpu, i);
    double tol = rel * std::max(std::abs(a), 1e-3 * scale);
    if (!(std::abs(a - b) <= tol)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": cpu " << a << " gpu " << b << " (tolerance " << tol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace troupe::gpu_testing
