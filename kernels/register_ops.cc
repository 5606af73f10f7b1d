#include "kernels/register_ops.h"

#include "troupe/build_info.h"
#if TROUPE_HAVE_CUDA
#include "kernels/cuda/gpu_kernels.h"
#endif

namespace troupe {

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterArrayOps(registry);
  RegisterElementwiseOps(registry);
  RegisterUnaryOps(registry);
  RegisterActivationOps(registry);
  RegisterActivationExtraOps(registry);
  RegisterCompareOps(registry);
  RegisterArgMaxOps(registry);
  RegisterCastOps(registry);
  RegisterRoundToPrecisionOps(registry);
  RegisterTransposeOps(registry);
  RegisterSlicingOps(registry);
  RegisterMatMulOps(registry);
  RegisterBatchMatMulOps(registry);
  RegisterGatherOps(registry);
  RegisterDepthwiseConvOps(registry);
  RegisterConv2DOps(registry);
  RegisterPoolingOps(registry);
  RegisterSoftmaxOps(registry);
  RegisterBiasOps(registry);
  RegisterBatchNormOps(registry);
  RegisterReductionOps(registry);
  RegisterBroadcastGradOps(registry);
  RegisterImageTransformOps(registry);
#if TROUPE_HAVE_CUDA
  RegisterGpuKernels(registry);
#endif
}

}  // namespace troupe
