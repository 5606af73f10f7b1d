// Internal to kernels/cuda: the GPU counterpart of kernels::ReduceInto. It reproduces the CPU's
// summation order exactly (same [A, R, B] grouping, 16384-element chunks, 16 interleaved lanes
// combined pairwise, chunk partials combined in order; for B > 1 rows accumulated in order per
// row chunk), so Sum/Mean/Prod/Max/Min give the CPU's bits, not just its value to 1e-5. No
// atomics: each output element is computed by a fixed set of threads in a fixed order.
#pragma once

#include <span>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/op_registry.h"
#include "kernels/reductions.h"

namespace troupe {
namespace gpu_ew {

// `x` and `out` live on the context's GPU; out has x's dtype and the kept dims' element count.
Status ReduceGpu(const KernelContext& ctx, kernels::Reducer reducer, const Tensor& x,
                 std::span<const int64_t> axes, Tensor& out);

}  // namespace gpu_ew
}  // namespace troupe
