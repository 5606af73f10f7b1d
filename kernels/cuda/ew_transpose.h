// Internal to kernels/cuda: dimension permutation on the GPU (the Transpose op and reductions
// over non-adjacent axes). Same contract as kernels::TransposeInto: out.dim(k) == in.dim(perm[k]),
// `out` allocated on the same GPU with in's dtype; moves bytes, so it is exact for every dtype.
#pragma once

#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {

// `out` points to device memory of in.num_elements() elements of in's dtype.
Status TransposeGpu(const KernelContext& ctx, const Tensor& in, std::span<const int> perm,
                    void* out);

}  // namespace gpu_ew
}  // namespace troupe
