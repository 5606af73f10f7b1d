// The MPI algorithms, as synchronous steps over an MpiChannel, shared by MpiCommunicator and
// the cross-host stage of HierarchicalCommunicator. Everything is non-blocking MPI polled
// against the deadline.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/mpi/mpi_channel.h"
#include "collectives/process_group.h"
#include "collectives/reduce_plan.h"

namespace troupe {

// Runs `plan` (process index = channel rank): per piece of `piece_elems` elements of every
// segment, each rank sends its contributions to the segment owner, the owner folds them in
// plan order and sends the published result to everyone (received into copy_out). Pieces are
// pipelined: the results of piece p travel with the contributions of piece p+1.
Status MpiReduce(MpiChannel& channel, const ReducePlan& plan, int64_t piece_elems,
                 Deadline deadline);

// Every rank's contributions (`bytes` each) land in every rank's outputs at ids[r][c] * bytes.
Status MpiAllGather(MpiChannel& channel, const std::vector<std::vector<int>>& ids,
                    const std::vector<const void*>& my_inputs, const std::vector<void*>& outputs,
                    size_t bytes, Deadline deadline);

// MPI_Ibcast of `bytes` from `root`'s buffer into everyone's.
Status MpiBroadcast(MpiChannel& channel, int root, void* buffer, size_t bytes, Deadline deadline);

// Broadcast of global replica `root_replica`'s `bytes` into every local output of every rank;
// `outputs` are this process's replicas in local order (the root's among them) and the
// channel's ranks are `group`'s world ranks.
Status MpiBroadcastReplica(MpiChannel& channel, const ProcessGroup& group, int root_replica,
                           const std::vector<void*>& outputs, size_t bytes, Deadline deadline);

// MPI's own MPI_Iallreduce, in place (fast mode: MPI picks the order). kMean sums then
// divides by `mean_divisor`; half and bfloat16 use user-defined MPI ops.
Status MpiNativeAllReduce(MpiChannel& channel, DType dtype, ReduceOp op, void* buffer,
                          int64_t count, int64_t mean_divisor, Deadline deadline);

}  // namespace troupe
