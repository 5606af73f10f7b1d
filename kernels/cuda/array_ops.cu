// GPU kernels: to be filled by their owner (registration is empty until then).
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/op_registry.h"

namespace troupe {

void RegisterGpuArrayKernels(OpRegistry&) {}

}  // namespace troupe
