#include "collectives/shm_collectives.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace troupe {
namespace {

char* At(void* p, int64_t byte_offset) { return static_cast<char*>(p) + byte_offset; }
const char* At(const void* p, int64_t byte_offset) {
  return static_cast<const char*>(p) + byte_offset;
}

}  // namespace

int ShmLayout::slots_per_set() const {
  return std::accumulate(contributions.begin(), contributions.end(), 0) + 1;
}

int ShmLayout::slot_index(int set, int local_rank, int c) const {
  int index = set * slots_per_set();
  for (int r = 0; r < local_rank; ++r) index += contributions[r];
  return index + c;
}

int ShmLayout::result_index(int set) const { return set * slots_per_set() + slots_per_set() - 1; }

int ShmLayout::SlotsNeeded(const std::vector<int>& contributions) {
  return 2 * (std::accumulate(contributions.begin(), contributions.end(), 0) + 1);
}

std::vector<int64_t> EvenBounds(int64_t count, int parts, int64_t align) {
  std::vector<int64_t> b(static_cast<size_t>(parts) + 1);
  for (int i = 0; i <= parts; ++i) {
    int64_t x = count * i / parts;
    if (i < parts) x = x / align * align;
    b[i] = x;
  }
  return b;
}

Status ShmReduce(const ShmLayout& layout, const ReducePlan& plan, Deadline deadline) {
  ShmSegment* seg = layout.segment;
  const int me = seg->local_rank();
  const int64_t esize = static_cast<int64_t>(DTypeSize(plan.dtype));
  const int num_segments = static_cast<int>(plan.segments.size());
  // Each slot holds one piece of every segment, side by side.
  const int64_t q = static_cast<int64_t>(seg->slot_bytes()) / esize / num_segments;
  if (q < 1) {
    return InvalidArgumentError("shared-memory slots of " + std::to_string(seg->slot_bytes()) +
                                " bytes cannot hold " + std::to_string(num_segments) +
                                " segments; raise CollectiveOptions::piece_bytes");
  }
  int64_t longest = 0;
  for (const auto& s : plan.segments) longest = std::max(longest, s.end - s.begin);
  const int64_t pieces = (longest + q - 1) / q;
  auto piece_len = [&](int j, int64_t p) {
    const auto& s = plan.segments[j];
    return std::clamp<int64_t>(s.end - s.begin - p * q, 0, q);
  };

  std::vector<const void*> srcs(plan.order.size());
  std::vector<void*> dsts;
  // Iteration p writes piece p, then after the barrier folds piece p and copies out piece p-1
  // (whose owner steps every rank finished before arriving at this barrier).
  for (int64_t p = 0; p <= pieces; ++p) {
    const int set = static_cast<int>(p & 1);
    if (p < pieces) {
      for (int c = 0; c < static_cast<int>(plan.my_inputs.size()); ++c) {
        char* slot = seg->slot(layout.slot_index(set, me, c));
        for (int j = 0; j < num_segments; ++j) {
          const int64_t n = piece_len(j, p);
          if (plan.segments[j].owner == me || n == 0) continue;
          std::memcpy(slot + j * q * esize,
                      At(plan.my_inputs[c], (plan.segments[j].begin + p * q) * esize), n * esize);
        }
      }
    }
    TROUPE_RETURN_IF_ERROR(seg->ArriveAndWait(deadline, "reduction"));
    if (p < pieces) {
      char* result = seg->slot(layout.result_index(set));
      for (int j = 0; j < num_segments; ++j) {
        const auto& s = plan.segments[j];
        const int64_t n = piece_len(j, p);
        if (s.owner != me || n == 0) continue;
        const int64_t elem = s.begin + p * q;
        for (size_t k = 0; k < plan.order.size(); ++k) {
          const auto [r, c] = plan.order[k];
          srcs[k] = r == me ? At(plan.my_inputs[c], elem * esize)
                            : seg->slot(layout.slot_index(set, r, c)) + j * q * esize;
        }
        dsts.clear();
        for (void* d : s.dsts) dsts.push_back(At(d, p * q * esize));
        if (s.publish) dsts.push_back(result + j * q * esize);
        if (plan.owner_step) {
          TROUPE_RETURN_IF_ERROR(plan.owner_step(j, elem, n, srcs, dsts));
        } else {
          FoldElements(plan.dtype, plan.op, srcs.data(), static_cast<int>(srcs.size()), dsts.data(),
                       static_cast<int>(dsts.size()), n, plan.mean_divisor);
        }
      }
    }
    if (p > 0) {
      const int64_t prev = p - 1;
      const char* result = seg->slot(layout.result_index(static_cast<int>(prev & 1)));
      for (int j = 0; j < num_segments; ++j) {
        const auto& s = plan.segments[j];
        const int64_t n = piece_len(j, prev);
        if (!s.publish || s.owner == me || n == 0) continue;
        for (void* d : plan.copy_out) {
          std::memcpy(At(d, (s.begin + prev * q) * esize), result + j * q * esize, n * esize);
        }
      }
    }
  }
  return Status::OK();
}

Status ShmAllGather(const ShmLayout& layout, const std::vector<std::vector<int>>& ids,
                    const std::vector<const void*>& my_inputs, const std::vector<void*>& outputs,
                    size_t bytes, Deadline deadline) {
  ShmSegment* seg = layout.segment;
  const int me = seg->local_rank();
  const size_t q = seg->slot_bytes();
  const int64_t pieces = static_cast<int64_t>((bytes + q - 1) / q);
  // Own inputs go straight to the outputs.
  for (size_t c = 0; c < my_inputs.size(); ++c) {
    for (void* out : outputs) std::memcpy(At(out, ids[me][c] * bytes), my_inputs[c], bytes);
  }
  for (int64_t p = 0; p < pieces; ++p) {
    const int set = static_cast<int>(p & 1);
    const size_t off = static_cast<size_t>(p) * q;
    const size_t n = std::min(q, bytes - off);
    for (size_t c = 0; c < my_inputs.size(); ++c) {
      std::memcpy(seg->slot(layout.slot_index(set, me, static_cast<int>(c))), At(my_inputs[c], off),
                  n);
    }
    TROUPE_RETURN_IF_ERROR(seg->ArriveAndWait(deadline, "allgather"));
    for (int r = 0; r < seg->local_size(); ++r) {
      if (r == me) continue;
      for (size_t c = 0; c < ids[r].size(); ++c) {
        const char* slot = seg->slot(layout.slot_index(set, r, static_cast<int>(c)));
        for (void* out : outputs) std::memcpy(At(out, ids[r][c] * bytes + off), slot, n);
      }
    }
  }
  return Status::OK();
}

Status ShmBroadcast(const ShmLayout& layout, int root, const void* src,
                    const std::vector<void*>& dsts, size_t bytes, Deadline deadline) {
  ShmSegment* seg = layout.segment;
  const bool is_root = seg->local_rank() == root;
  // The whole data area of one set is one staging buffer.
  const size_t q = seg->slot_bytes() * static_cast<size_t>(layout.slots_per_set());
  const int64_t pieces = static_cast<int64_t>((bytes + q - 1) / q);
  if (is_root) {
    for (void* d : dsts) {
      if (d != src) std::memcpy(d, src, bytes);
    }
  }
  for (int64_t p = 0; p < pieces; ++p) {
    char* stage = seg->slot(layout.slot_index(static_cast<int>(p & 1), 0, 0));
    const size_t off = static_cast<size_t>(p) * q;
    const size_t n = std::min(q, bytes - off);
    if (is_root) std::memcpy(stage, At(src, off), n);
    TROUPE_RETURN_IF_ERROR(seg->ArriveAndWait(deadline, "broadcast"));
    if (!is_root) {
      for (void* d : dsts) std::memcpy(At(d, off), stage, n);
    }
  }
  return Status::OK();
}

}  // namespace troupe
