#include "kernels/cuda/gpu_kernels.h"

namespace troupe {

void RegisterGpuKernels(OpRegistry& registry) {
  RegisterGpuMatMulKernels(registry);
  RegisterGpuConvKernels(registry);
  RegisterGpuPoolingKernels(registry);
  RegisterGpuBiasKernels(registry);
  RegisterGpuElementwiseKernels(registry);
  RegisterGpuReductionKernels(registry);
  RegisterGpuSoftmaxKernels(registry);
  RegisterGpuArrayKernels(registry);
}

}  // namespace troupe
