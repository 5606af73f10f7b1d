// Dimension permutation of a tensor's elements, dtype-agnostic (moves bytes), used by the
// Transpose op and by reductions over non-adjacent axes.
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace troupe {
namespace kernels {

// out[i_perm[0], ..., i_perm[r-1]] = in[i_0, ..., i_{r-1}], i.e. out.dim(k) == in.dim(perm[k]).
// `out` must be allocated with that shape and in's dtype; perm must be a permutation.
void TransposeInto(const Tensor& in, std::span<const int> perm, Tensor& out, ThreadPool* pool);

}  // namespace kernels
}  // namespace troupe
