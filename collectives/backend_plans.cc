#include "collectives/backend_plans.h"

#include <algorithm>
#include <numeric>

#include "collectives/in_process_communicator.h"

namespace troupe {

std::vector<std::pair<int, int>> ReplicaFoldOrder(const ProcessGroup& group,
                                                  const std::vector<int>& ranks) {
  std::vector<std::pair<int, std::pair<int, int>>> keyed;
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    const auto& ids = group.replica_ids[ranks[i]];
    for (int c = 0; c < static_cast<int>(ids.size()); ++c) keyed.push_back({ids[c], {i, c}});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::pair<int, int>> out;
  for (const auto& k : keyed) out.push_back(k.second);
  return out;
}

std::vector<std::pair<int, int>> ReplicaFoldOrder(const ProcessGroup& group) {
  std::vector<int> ranks(static_cast<size_t>(group.world_size));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ReplicaFoldOrder(group, ranks);
}

std::vector<void*> DataPointers(const std::vector<Tensor>& tensors) {
  std::vector<void*> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.raw_data());
  return out;
}

std::vector<const void*> ConstDataPointers(const std::vector<Tensor>& tensors) {
  std::vector<const void*> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(t.raw_data());
  return out;
}

void PreReduceLocal(DType dtype, ReduceOp op, const std::vector<Tensor>& inputs, void* out,
                    int64_t count) {
  if (inputs.size() < 2) return;
  const ReduceOp local = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  ParallelFold(dtype, local, ConstDataPointers(inputs), {out}, count, 1);
}

void AddAllReduceSegments(int64_t count, int num_processes, int me, const std::vector<void*>& outs,
                          ReducePlan* plan) {
  const size_t esize = DTypeSize(plan->dtype);
  const auto bounds = EvenBounds(count, num_processes, 64 / static_cast<int64_t>(esize));
  for (int j = 0; j < num_processes; ++j) {
    ReducePlan::Segment s;
    s.begin = bounds[j];
    s.end = bounds[j + 1];
    s.owner = j;
    s.publish = true;
    if (j == me) {
      for (void* o : outs) s.dsts.push_back(static_cast<char*>(o) + s.begin * esize);
    }
    plan->segments.push_back(std::move(s));
  }
  plan->copy_out = outs;
}

ReducePlan ReduceScatterPlan(const ProcessGroup& group, DType dtype, ReduceOp op, int64_t count,
                             const std::vector<std::pair<int, int>>& order,
                             const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& outputs) {
  const int n = group.num_replicas();
  const int64_t chunk = count / n;
  ReducePlan plan;
  plan.dtype = dtype;
  plan.op = op;
  plan.mean_divisor = n;
  plan.order = order;
  plan.my_inputs = ConstDataPointers(inputs);
  for (int g = 0; g < n; ++g) {
    ReducePlan::Segment s;
    s.begin = g * chunk;
    s.end = (g + 1) * chunk;
    s.owner = group.RankOfReplica(g);
    if (s.owner == group.world_rank) {
      s.dsts.push_back(outputs[group.LocalIndexOfReplica(g)].raw_data());
    }
    plan.segments.push_back(std::move(s));
  }
  return plan;
}

}  // namespace troupe
