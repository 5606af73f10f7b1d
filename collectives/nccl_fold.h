// Device-side fold used by NcclCommunicator's deterministic mode: the same left-to-right,
// round-every-step arithmetic as FoldElements on the CPU (bit-identical results), run over
// n slots of one staging buffer. Compiled by nvcc (nccl_fold.cu).
#pragma once

#include <cstdint>

#include "collectives/reduce.h"
#include "core/dtype.h"

namespace troupe::nccl {

// out[i] = slots[order[0]][i] op slots[order[1]][i] ... for i < count; slot s starts at element
// s * slot_stride. `order` is a device array of n slot indices. kMean divides by
// mean_divisor at the end. Enqueued on `stream` (a cudaStream_t).
void LaunchFold(DType dtype, ReduceOp op, const void* slots, int64_t slot_stride, const int* order,
                int n, int64_t count, void* out, int64_t mean_divisor, void* stream);

}  // namespace troupe::nccl
