// Reduction operators and the element-wise fold kernels every backend uses. A fold combines its
// sources strictly left to right (((s0 op s1) op s2) ...), rounding to the storage type after
// every step (half/bfloat16 included), so the bits depend only on the order of the sources —
// which the backends fix to global-replica-id order in deterministic mode.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"

namespace troupe {

enum class ReduceOp { kSum = 0, kMean = 1, kMax = 2, kMin = 3 };

std::string_view ReduceOpName(ReduceOp op);

// float32, float64, bfloat16, half, int32, int64.
bool IsCollectiveDType(DType dtype);
// InvalidArgument naming `what` and the supported list when dtype is not one of them.
Status CheckCollectiveDType(DType dtype, std::string_view what);

// For i in [0, n): r = srcs[0][i] op srcs[1][i] op ... (left to right); kMean folds as a sum and
// then divides by `mean_divisor` (integers truncate toward zero); r goes to every dsts[k][i].
// A destination may alias a source element for element (in-place is fine). kMax/kMin
// propagate NaN. Integer sums wrap around instead of overflowing.
void FoldElements(DType dtype, ReduceOp op, const void* const* srcs, int num_srcs,
                  void* const* dsts, int num_dsts, int64_t n, int64_t mean_divisor);

// Divides n elements in place by `divisor` (the mean's last step when the sum was folded
// elsewhere).
void DivideElements(DType dtype, void* data, int64_t n, int64_t divisor);

}  // namespace troupe
