// Numpy-style broadcasting for binary elementwise ops: the result shape of two operands, an
// iteration plan that walks both inputs with zero strides on broadcast axes, and the axes a
// gradient must be summed over to return to an operand's shape (TF's BroadcastGradientArgs).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor_shape.h"

namespace troupe {
namespace kernels {

// Result shape of broadcasting `a` against `b` (dims aligned from the right; a dim of 1
// stretches). Unknown dims stay unknown unless the other side fixes them. Error:
// "Add: incompatible shapes for broadcasting: 'x' [2,3] vs 'y' [4] (dim 1: 3 vs 4)".
Result<TensorShape> BroadcastShapes(std::string_view op, std::string_view arg_a,
                                    const TensorShape& a, std::string_view arg_b,
                                    const TensorShape& b);

// Concrete iteration plan: the output as coalesced dims, each input's element stride per dim
// (0 where it is broadcast). dims is never empty (a scalar output is dims {1}).
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> a_strides;
  std::vector<int64_t> b_strides;
  int64_t num_elements = 0;
};
BroadcastPlan MakeBroadcastPlan(const TensorShape& a, const TensorShape& b, const TensorShape& out);

// Axes of `out` (the broadcast result) along which `in` was stretched: where in's dim,
// left-padded with 1s, is 1 and out's is not. Summing a gradient over them and reshaping to
// `in` undoes the broadcast. Matches TF's BroadcastGradientArgs for one operand.
std::vector<int64_t> BroadcastReductionAxes(const TensorShape& in, const TensorShape& out);

// Batched matrix products (BatchMatMulV2 on the CPU and the GPU): the element offset of each
// batch of `out` (a batch shape) in an operand of batch shape `in` whose matrices hold `matrix`
// elements; `in` is left-padded with 1s against `out`, and a dim of 1 is broadcast.
std::vector<int64_t> BatchOffsets(const TensorShape& in, const TensorShape& out, int64_t matrix);

}  // namespace kernels
}  // namespace troupe
