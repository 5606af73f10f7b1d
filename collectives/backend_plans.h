// What the multi-process backends (shared memory, MPI, hierarchical) share to turn one
// operation's tensors into raw buffers and ReducePlans: the global fold order, fast mode's local
// pre-reduction, and the segment layouts of allreduce and reduce_scatter. Internal to
// collectives/.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "collectives/process_group.h"
#include "collectives/reduce_plan.h"
#include "core/tensor.h"

namespace troupe {

// Contributions of the ranks in `ranks` listed in global-replica-id order:
// (index into ranks, local replica index).
std::vector<std::pair<int, int>> ReplicaFoldOrder(const ProcessGroup& group,
                                                  const std::vector<int>& ranks);
// The same over every rank of the group (index = world rank).
std::vector<std::pair<int, int>> ReplicaFoldOrder(const ProcessGroup& group);

// Element 0 of each tensor's buffer.
std::vector<void*> DataPointers(const std::vector<Tensor>& tensors);
std::vector<const void*> ConstDataPointers(const std::vector<Tensor>& tensors);

// Fast mode's first stage: folds this process's replicas (in local order) into `out`; a mean
// folds as a sum here and is divided once every process's sum is in. Nothing to do for one
// replica (its input is `out`).
void PreReduceLocal(DType dtype, ReduceOp op, const std::vector<Tensor>& inputs, void* out,
                    int64_t count);

// Allreduce over `num_processes`: [0, count) cut into one published segment per process (owner j
// folds the j-th, starts aligned to 64 bytes); process `me` writes its segment into every buffer
// of `outs`, and every process receives all published segments into `outs`. Uses plan->dtype.
void AddAllReduceSegments(int64_t count, int num_processes, int me, const std::vector<void*>& outs,
                          ReducePlan* plan);

// Reduce_scatter over every replica of `group` (process index = world rank), folded in `order`:
// replica g's output is elements [g * count / N, (g + 1) * count / N) of the reduction, folded by
// the rank that holds g. `inputs`/`outputs` are this process's, in local order.
ReducePlan ReduceScatterPlan(const ProcessGroup& group, DType dtype, ReduceOp op, int64_t count,
                             const std::vector<std::pair<int, int>>& order,
                             const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

}  // namespace troupe
