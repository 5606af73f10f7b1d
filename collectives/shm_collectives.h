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

#include "collectives/reduce_plan.h"
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

// Reduces plan.segments across the host. Every local rank calls it with plans that agree on
// everything but my_inputs/dsts/copy_out.
Status ShmReduce(const ShmLayout& layout, const ReducePlan& plan, Deadline deadline);

// Each rank's contributions (`bytes` each) land in every rank's outputs at position
// ids[r][c] * bytes.
Status ShmAllGather(const ShmLayout& layout, const std::vector<std::vector<int>>& ids,
                    const std::vector<const void*>& my_inputs, const std::vector<void*>& outputs,
                    size_t bytes, Deadline deadline);

// Copies `bytes` from `src` on local rank `root` into every dst of every rank (the root's own
// dsts included).
Status ShmBroadcast(const ShmLayout& layout, int root, const void* src,
                    const std::vector<void*>& dsts, size_t bytes, Deadline deadline);

}  // namespace troupe
