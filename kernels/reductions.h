// Reductions over axes (Sum, Mean, Max, Min, Prod) as reusable functions for other kernels
// (BiasAddGrad, broadcast gradients) and the graph's autodiff. Work is split into chunks whose
// size depends only on the shape, and chunk results are combined in a fixed order, so results
// are bitwise identical for any thread count.
#pragma once

#include <cstdint>
#include <span>

#include "core/result.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace troupe {
namespace kernels {

enum class Reducer { kSum, kMean, kMax, kMin, kProd };

// Reduces `x` (float32/64, int32/64) over `axes` (each in [0, rank); any order; duplicates
// ignored) into `out`, which has x's dtype and the kept dims' element count (any shape).
Status ReduceInto(Reducer reducer, const Tensor& x, std::span<const int64_t> axes, Tensor& out,
                  ThreadPool* pool);

// Undoes numpy broadcasting in a gradient: sums `grad` over the axes along which `out`'s shape
// was stretched to grad's shape (BroadcastReductionAxes) and writes the result into `out`.
Status SumToShapeInto(const Tensor& grad, Tensor& out, ThreadPool* pool);
Result<Tensor> SumToShape(const Tensor& grad, const TensorShape& shape,
                          ThreadPool* pool = ThreadPool::Default());

}  // namespace kernels
}  // namespace troupe
