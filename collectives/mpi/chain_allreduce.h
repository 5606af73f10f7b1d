// ChainAllReduce: the deterministic cross-host allreduce of one segment. The global fold order
// (replica ids) is cut into runs of consecutive ids living on one host; the partial sum travels
// host to host along the runs, each host folding its run onto it in id order, so the bits equal
// a serial left fold r0, r1, ..., r_{R-1}. Pipelined: the segment is cut into pieces, and a host
// forwards piece k as soon as it is folded while piece k+1 is still on its way, so every link
// is busy at once. The host of the last run then distributes the result: piece k goes to one
// other host, which forwards it to the rest (an allgather whose first hop starts at the last
// host), or every H-th piece straight to everyone, which balances the egress of every host at
// 2(H-1)/H of the segment, the same as a ring allreduce's.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/mpi/mpi_channel.h"
#include "collectives/reduce.h"

namespace troupe {

struct ChainRun {
  int host;   // channel rank
  int begin;  // [begin, end) into that host's contributions in fold order
  int end;
};

struct ChainArgs {
  DType dtype = DType::kInvalid;
  ReduceOp op = ReduceOp::kSum;
  int64_t mean_divisor = 1;  // kMean: the number of replicas
  int64_t count = 0;         // elements of the segment (the same on every host)
  int64_t piece_elems = 1;   // elements per message; any value gives the same bits
  std::vector<ChainRun> runs;
  std::vector<const void*> contributions;  // this host's, in fold order; not modified
  void* result = nullptr;                  // count elements, receives the result on every host
};

// Collective over `channel` (rank = host). Unavailable when a peer on this host exits,
// DeadlineExceeded naming the missing hosts at `deadline`.
Status ChainAllReduce(MpiChannel& channel, const ChainArgs& args, Deadline deadline);

// Elements per message for a segment of `bytes`: enough pieces to fill the chain, each large
// enough to keep per-message costs small, at most `max_bytes` (0: no cap beyond the default).
int64_t ChainPieceElems(int64_t count, size_t esize, size_t max_bytes);

}  // namespace troupe
