// Internal: float32 softmax of one row for the Softmax kernel (kernels/softmax_xent.cc).
// y = exp(x - max) * (1 / sum), exp from kernels/simd_math.h and the sum in 8 fixed lanes
// (element j adds into lane j % 8 in order, the lanes folded pairwise, then the tail), so the
// bits depend only on the row, never on the thread split or the CPU path.
#pragma once

#include <cstdint>

namespace troupe {
namespace kernels {

void SoftmaxRowF32(const float* x, float* y, int64_t c);

}  // namespace kernels
}  // namespace troupe
