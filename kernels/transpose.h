// Dimension permutation of a tensor's elements, dtype-agnostic (moves bytes), used by the
// Transpose op and by reductions over non-adjacent axes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace troupe {
namespace kernels {

// out[i_perm[0], ..., i_perm[r-1]] = in[i_0, ..., i_{r-1}], i.e. out.dim(k) == in.dim(perm[k]).
// `out` must be allocated with that shape and in's dtype; perm must be a permutation.
void TransposeInto(const Tensor& in, std::span<const int> perm, Tensor& out, ThreadPool* pool);

// The permutation as a strided walk over the input (shared with the GPU kernel): the output's
// dims in order with their input strides (elements), size-1 dims dropped and dims that stay
// adjacent in the input merged. Empty dims, or one dim of stride 1: a plain copy.
struct TransposeWalk {
  std::vector<int64_t> dims, strides;
  bool IsCopy() const { return dims.empty() || (dims.size() == 1 && strides[0] == 1); }
};
TransposeWalk CoalesceTranspose(const TensorShape& in, std::span<const int> perm);

}  // namespace kernels
}  // namespace troupe
