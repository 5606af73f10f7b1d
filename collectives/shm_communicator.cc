#include "collectives/shm_communicator.h"

#include <algorithm>
#include <cstring>

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

Result<std::unique_ptr<ShmCommunicator>> ShmCommunicator::Create(ProcessGroup group,
                                                                 CollectiveOptions options,
                                                                 std::string segment_name) {
  TROUPE_RETURN_IF_ERROR(group.Validate());
  if (group.num_hosts() != 1) {
    return InvalidArgumentError("shm communicator: group spans " +
                                std::to_string(group.num_hosts()) +
                                " hosts; use the hierarchical backend across hosts");
  }
  std::vector<int> per_rank;
  for (const auto& ids : group.replica_ids) per_rank.push_back(static_cast<int>(ids.size()));
  ShmSegment::Params params;
  params.name = segment_name + "-s" + std::to_string(NextSegmentSequence());
  params.local_rank = group.local_rank;
  params.local_size = group.local_size;
  params.num_slots = ShmLayout::SlotsNeeded(per_rank);
  params.slot_bytes = options.piece_bytes;
  params.heap_bytes = options.shm_heap_bytes;
  for (int r = 0; r < group.world_size; ++r) params.world_ranks.push_back(r);
  TROUPE_ASSIGN_OR_RETURN(auto segment, ShmSegment::Join(params, DeadlineAfter(options.timeout)));
  return std::unique_ptr<ShmCommunicator>(
      new ShmCommunicator(std::move(group), options, std::move(segment)));
}

ShmCommunicator::ShmCommunicator(ProcessGroup group, CollectiveOptions options,
                                 std::unique_ptr<ShmSegment> segment)
    : Communicator(std::move(group), options), segment_(std::move(segment)) {
  if (segment_->heap_bytes() > 0) {
    heap_ =
        std::make_shared<ShmHeap>(segment_->heap(segment_->local_rank()), segment_->heap_bytes());
  }
  per_replica_.segment = segment_.get();
  per_process_.segment = segment_.get();
  for (const auto& ids : group_.replica_ids) {
    per_replica_.contributions.push_back(static_cast<int>(ids.size()));
    per_process_.contributions.push_back(1);
  }
  std::vector<int> ranks(static_cast<size_t>(group_.world_size));
  for (int r = 0; r < group_.world_size; ++r) ranks[r] = r;
  id_order_ = ReplicaFoldOrder(group_, ranks);
}

ShmCommunicator::~ShmCommunicator() { Shutdown(); }

Status ShmCommunicator::ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                        std::vector<OpHeader>* all) {
  return segment_->ExchangeHeaders(mine, deadline, all);
}

Result<Tensor> ShmCommunicator::AllocateTensor(DType dtype, const TensorShape& shape) {
  const size_t bytes =
      static_cast<size_t>(std::max<int64_t>(shape.num_elements(), 0)) * DTypeSize(dtype);
  char* p = heap_ && IsCollectiveDType(dtype) && shape.IsFullyDefined() ? heap_->Allocate(bytes)
                                                                        : nullptr;
  if (p == nullptr) return Tensor::Allocate(dtype, shape);
  // The tensor keeps the mapping alive and returns its block when the last reference goes.
  auto buffer = TensorBuffer::Wrap(p, bytes, Device::Cpu(),
                                   [heap = heap_, segment = segment_, p] { heap->Free(p); });
  return Tensor::FromBuffer(dtype, shape, std::move(buffer));
}

void ShmCommunicator::BeforeHeaderExchange(const Op& op) {
  std::vector<int64_t> offsets;
  for (const Tensor& t : op.inputs) {
    const bool shared = heap_ && op.kind == CollectiveKind::kAllReduce && op.local_error.ok() &&
                        t.byte_size() > 0 && heap_->Contains(t.raw_data());
    offsets.push_back(shared ? static_cast<int64_t>(heap_->OffsetOf(t.raw_data())) : -1);
  }
  segment_->PublishBuffers(op.seq, offsets);
}

Status ShmCommunicator::RunZeroCopyAllReduce(Op& op) {
  const int k = group_.world_size;
  const int me = group_.world_rank;
  const int64_t esize = static_cast<int64_t>(DTypeSize(op.dtype));
  std::vector<std::vector<int64_t>> offsets(static_cast<size_t>(k));
  for (int r = 0; r < k; ++r) {
    offsets[r] =
        segment_->PublishedBuffers(r, op.seq, static_cast<int>(group_.replica_ids[r].size()));
  }
  const auto bounds = EvenBounds(op.count, k, 64 / esize);
  const int64_t begin = bounds[me], n = bounds[me + 1] - bounds[me];
  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  for (const auto& [r, c] : id_order_) {
    char* p = segment_->heap(r) + offsets[r][c] + begin * esize;
    srcs.push_back(p);
    dsts.push_back(p);
  }
  // Elements are read from every buffer before any is written, so folding in place is safe.
  FoldElements(op.dtype, op.reduce_op, srcs.data(), static_cast<int>(srcs.size()), dsts.data(),
               static_cast<int>(dsts.size()), n, group_.num_replicas());
  // Nobody may touch its tensor again until every owner has written its segment.
  TROUPE_RETURN_IF_ERROR(segment_->ArriveAndWait(op.deadline, "zero-copy reduction"));
  ++zero_copy_ops_;
  return Status::OK();
}

Status ShmCommunicator::RunAllReduce(Op& op) {
  if (heap_) {
    bool all_shared = true;
    for (int r = 0; r < group_.world_size && all_shared; ++r) {
      for (int64_t off :
           segment_->PublishedBuffers(r, op.seq, static_cast<int>(group_.replica_ids[r].size()))) {
        all_shared = all_shared && off >= 0;
      }
    }
    // Every rank reads the same published offsets, so all take the same path.
    if (all_shared) return RunZeroCopyAllReduce(op);
  }
  const int k = group_.world_size;
  const int me = group_.world_rank;
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  plan.mean_divisor = group_.num_replicas();
  std::vector<void*> outs;
  for (const Tensor& t : op.outputs) outs.push_back(t.raw_data());
  const ShmLayout* layout = &per_replica_;
  if (options_.deterministic || group_.num_local_replicas() == 1) {
    plan.order = id_order_;
    for (const Tensor& t : op.inputs) plan.my_inputs.push_back(t.raw_data());
  } else {
    // Fast mode: fold the local replicas first (any order), then one contribution per rank.
    std::vector<const void*> srcs;
    for (const Tensor& t : op.inputs) srcs.push_back(t.raw_data());
    const ReduceOp local_op = op.reduce_op == ReduceOp::kMean ? ReduceOp::kSum : op.reduce_op;
    ParallelFold(op.dtype, local_op, srcs, {outs[0]}, op.count, 1);
    layout = &per_process_;
    for (int r = 0; r < k; ++r) plan.order.push_back({r, 0});
    plan.my_inputs = {outs[0]};
  }
  const size_t esize = DTypeSize(op.dtype);
  const std::vector<int64_t> bounds = EvenBounds(op.count, k, 64 / static_cast<int64_t>(esize));
  for (int j = 0; j < k; ++j) {
    ReducePlan::Segment s;
    s.begin = bounds[j];
    s.end = bounds[j + 1];
    s.owner = j;
    s.publish = true;
    if (j == me) {
      for (void* o : outs) s.dsts.push_back(static_cast<char*>(o) + s.begin * esize);
    }
    plan.segments.push_back(std::move(s));
  }
  plan.copy_out = outs;
  return ShmReduce(*layout, plan, op.deadline);
}

Status ShmCommunicator::RunReduceScatter(Op& op) {
  const int n = group_.num_replicas();
  const int64_t chunk = op.count / n;
  const auto& my_ids = group_.local_replica_ids();
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  plan.mean_divisor = n;
  plan.order = id_order_;
  for (const Tensor& t : op.inputs) plan.my_inputs.push_back(t.raw_data());
  for (int g = 0; g < n; ++g) {
    ReducePlan::Segment s;
    s.begin = g * chunk;
    s.end = (g + 1) * chunk;
    s.owner = group_.RankOfReplica(g);
    if (s.owner == group_.world_rank) {
      const int local =
          static_cast<int>(std::find(my_ids.begin(), my_ids.end(), g) - my_ids.begin());
      s.dsts.push_back(op.outputs[local].raw_data());
    }
    plan.segments.push_back(std::move(s));
  }
  return ShmReduce(per_replica_, plan, op.deadline);
}

Status ShmCommunicator::Run(Op& op) {
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      return RunAllReduce(op);
    case CollectiveKind::kReduceScatter:
      return RunReduceScatter(op);
    case CollectiveKind::kAllGather: {
      std::vector<const void*> ins;
      std::vector<void*> outs;
      for (const Tensor& t : op.inputs) ins.push_back(t.raw_data());
      for (const Tensor& t : op.outputs) outs.push_back(t.raw_data());
      return ShmAllGather(per_replica_, group_.replica_ids, ins, outs,
                          static_cast<size_t>(op.count) * DTypeSize(op.dtype), op.deadline);
    }
    case CollectiveKind::kBroadcast: {
      const int root_rank = group_.RankOfReplica(op.root);
      const void* src = nullptr;
      if (root_rank == group_.world_rank) {
        const auto& ids = group_.local_replica_ids();
        src = op.inputs[std::find(ids.begin(), ids.end(), op.root) - ids.begin()].raw_data();
      }
      std::vector<void*> outs;
      for (const Tensor& t : op.outputs) outs.push_back(t.raw_data());
      return ShmBroadcast(per_replica_, root_rank, src, outs,
                          static_cast<size_t>(op.count) * DTypeSize(op.dtype), op.deadline);
    }
    case CollectiveKind::kBarrier:
      return Status::OK();
  }
  return InternalError("unknown collective kind");
}

}  // namespace troupe
