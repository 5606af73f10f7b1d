// Reductions over axes (Sum, Mean, Max, Min, Prod) as reusable functions for other kernels
// (BiasAddGrad, broadcast gradients) and the graph's autodiff. Work is split into chunks whose
// size depends only on the shape, and chunk results are combined in a fixed order, so results
// are bitwise identical for any thread count.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/attr.h"

namespace troupe {
namespace kernels {

enum class Reducer { kSum, kMean, kMax, kMin, kProd };

// Reduces `x` (float32/64, int32/64) over `axes` (each in [0, rank); any order; duplicates
// ignored) into `out`, which has x's dtype and the kept dims' element count (any shape).
Status ReduceInto(Reducer reducer, const Tensor& x, std::span<const int64_t> axes, Tensor& out,
                  ThreadPool* pool);

// How a reduction of a tensor of `shape` over `axes` walks it (shared by the CPU and GPU
// kernels). Adjacent dims with the same role merge and size-1 dims play no role; when one
// reduced group lies between kept ones, x is viewed in place as [A, R, B] (simple). Otherwise
// the dims must first be transposed by `perm` (kept dims, then reduced ones) into [A, R], B = 1.
struct ReductionPlan {
  bool simple = true;
  int64_t A = 1, R = 1, B = 1;
  std::vector<int> perm;  // only when !simple
};
// An axis outside [0, rank) is an InternalError naming `caller`.
Result<ReductionPlan> PlanReduction(std::string_view caller, const TensorShape& shape,
                                    std::span<const int64_t> axes);

// The reduction ops' "axis" attr (absent: all axes; an int or a list; negative counts from the
// end), normalized, sorted and deduplicated. Errors name `op`.
Result<std::vector<int64_t>> ReductionAxesFromAttrs(std::string_view op, const AttrMap& attrs,
                                                    int rank);

// Undoes numpy broadcasting in a gradient: sums `grad` over the axes along which `out`'s shape
// was stretched to grad's shape (BroadcastReductionAxes) and writes the result into `out`.
Status SumToShapeInto(const Tensor& grad, Tensor& out, ThreadPool* pool);
Result<Tensor> SumToShape(const Tensor& grad, const TensorShape& shape,
                          ThreadPool* pool = ThreadPool::Default());

}  // namespace kernels
}  // namespace troupe
