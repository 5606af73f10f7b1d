#include "kernels/cuda/fault_injection.h"
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
  RegisterGpuSlicingKernels(registry);
  RegisterGpuBatchMatMulKernels(registry);
  RegisterGpuGatherKernels(registry);
  // Last: wraps every kernel registered above (fault reports, TROUPE_GPU_INJECT_FAULT).
  InstallGpuFaultHandling(registry);
}

}  // namespace troupe
