// The shared-memory algorithms, as synchronous steps over a ShmSegment joined by the processes
// of one host. Used by ShmCommunicator (one host) and HierarchicalCommunicator (the host stage).
//
// Data moves in pieces of one slot. The segment holds two sets of slots (one per parity of the
// piece index) plus a result slot per set, so one barrier per piece suffices: after barrier p
// every rank knows all writes of piece p and all owner steps of piece p-1 are done.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "collectives/reduce.h"
#include "collectives/shm_segment.h"

namespace troupe {

// How the local ranks share a segment's slots: contributions[r] slots per rank per set.
struct ShmLayout {
  ShmSegment* segment = nullptr;
  std::vector<int> contributions;  // per local rank: slots it may fill in one piece
  int slots_per_set() const;       // sum(contributions) + 1 (the result slot)
  int slot_index(int set, int local_rank, int c) const;
  int result_index(int set) const;
  // Number of slots a segment needs for these contributions (both sets).
  static int SlotsNeeded(const std::vector<int>& contributions);
};

struct ShmReducePlan {
  DType dtype = DType::kInvalid;
  ReduceOp op = ReduceOp::kSum;
  int64_t mean_divisor = 1;
  // Fold order over the host: (local rank, contribution index).
  std::vector<std::pair<int, int>> order;
  std::vector<const void*> my_inputs;  // this rank's contributions (element 0 of each)
  struct Segment {
    int64_t begin = 0;
    int64_t end = 0;
    int owner = 0;            // local rank that folds it
    std::vector<void*> dsts;  // owner only: where the folded segment goes (element `begin`)
    bool publish = false;     // also copy it to every other rank's `copy_out`
  };
  std::vector<Segment> segments;
  std::vector<void*> copy_out;  // element 0 of each buffer receiving published segments
  // Replaces the owner's fold of one piece of a segment (the hierarchical cross-host step).
  // srcs are in fold order; dsts include the result slot when the segment is published.
  std::function<Status(int segment, int64_t offset, int64_t n, const std::vector<const void*>& srcs,
                       const std::vector<void*>& dsts)>
      owner_step;
};

// Reduces plan.segments across the host. Every local rank calls it with plans that agree on
// everything but my_inputs/dsts/copy_out.
Status ShmReduce(const ShmLayout& layout, const ShmReducePlan& plan, Deadline deadline);

// Each rank's contributions (`bytes` each) land in every rank's outputs at position
// ids[r][c] * bytes.
Status ShmAllGather(const ShmLayout& layout, const std::vector<std::vector<int>>& ids,
                    const std::vector<const void*>& my_inputs, const std::vector<void*>& outputs,
                    size_t bytes, Deadline deadline);

// Copies `bytes` from `src` on local rank `root` into every dst of every rank (the root's own
// dsts included).
Status ShmBroadcast(const ShmLayout& layout, int root, const void* src,
                    const std::vector<void*>& dsts, size_t bytes, Deadline deadline);

// Splits [0, count) into `parts` nearly equal ranges whose starts are multiples of `align`.
std::vector<int64_t> EvenBounds(int64_t count, int parts, int64_t align);

}  // namespace troupe
