// ReducePlan: what a multi-process reduction does, independent of transport. The element range
// is cut into segments; each segment has an owner process that folds every contribution's
// piece of it in the given order and writes the result to its destinations, optionally
// publishing it to every other process (allreduce) or not (reduce_scatter).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "collectives/reduce.h"
#include "core/status.h"

namespace troupe {

struct ReducePlan {
  DType dtype = DType::kInvalid;
  ReduceOp op = ReduceOp::kSum;
  int64_t mean_divisor = 1;
  // Fold order: (process index within the group, contribution index).
  std::vector<std::pair<int, int>> order;
  std::vector<const void*> my_inputs;  // this rank's contributions (element 0 of each)
  struct Segment {
    int64_t begin = 0;
    int64_t end = 0;
    int owner = 0;            // process index (within the group) that folds it
    std::vector<void*> dsts;  // owner only: where the folded segment goes (element `begin`)
    bool publish = false;     // also copy it to every other rank's `copy_out`
  };
  std::vector<Segment> segments;
  std::vector<void*> copy_out;  // element 0 of each buffer receiving published segments
  // Replaces the owner's fold of one piece of a segment (the hierarchical cross-host step).
  // `offset` is the piece's first element.
  // srcs are in fold order; dsts include the result slot when the segment is published.
  std::function<Status(int segment, int64_t offset, int64_t n, const std::vector<const void*>& srcs,
                       const std::vector<void*>& dsts)>
      owner_step;
};

// Splits [0, count) into `parts` nearly equal ranges whose starts are multiples of `align`.
std::vector<int64_t> EvenBounds(int64_t count, int parts, int64_t align);

}  // namespace troupe
