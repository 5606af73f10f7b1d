#include "kernels/register_ops.h"

namespace troupe {

void RegisterBuiltinOps(OpRegistry& registry) {
  RegisterArrayOps(registry);
  RegisterElementwiseOps(registry);
  RegisterUnaryOps(registry);
  RegisterActivationOps(registry);
  RegisterCompareOps(registry);
  RegisterArgMaxOps(registry);
  RegisterCastOps(registry);
  RegisterTransposeOps(registry);
  RegisterSlicingOps(registry);
  RegisterMatMulOps(registry);
  RegisterConv2DOps(registry);
  RegisterPoolingOps(registry);
  RegisterSoftmaxOps(registry);
  RegisterBiasOps(registry);
  RegisterReductionOps(registry);
  RegisterBroadcastGradOps(registry);
}

}  // namespace troupe
