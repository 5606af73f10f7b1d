// Internal to kernels/cuda: the GPU counterpart of kernels::ReduceInto (Sum, Mean, Prod, Max,
// Min over any set of axes). Fast and deterministic: the summation order is a fixed tree chosen
// from the shape alone (never from the device, its SM count or timing), there are no atomics, and
// the same inputs give the same bits run after run. The order differs from the CPU's, so float
// Sum/Mean/Prod agree with the CPU to rounding, not bitwise; Max/Min and integers are exact.
#pragma once

#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/op_registry.h"
#include "kernels/reductions.h"

namespace troupe {
namespace gpu_ew {

// `x` and `out` live on the context's GPU; out has x's dtype and the kept dims' element count.
// Scratch comes from the device's stream-ordered allocator; nothing waits on the host.
Status ReduceGpu(const KernelContext& ctx, kernels::Reducer reducer, const Tensor& x,
                 std::span<const int64_t> axes, Tensor& out);

}  // namespace gpu_ew
}  // namespace troupe
