#include "collectives/shm_communicator.h"

#include <algorithm>
#include <cstring>

#include "collectives/backend_plans.h"

namespace troupe {

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
  params.eager_slot_bytes = kEagerBytes;
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
  id_order_ = ReplicaFoldOrder(group_);
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
  if (IsEager(op)) return StageEager(op);
  if (!heap_) return;  // nothing to publish (every rank has no heap)
  std::vector<int64_t> offsets;
  for (const Tensor& t : op.inputs) {
    const bool shared = heap_ && op.kind == CollectiveKind::kAllReduce && op.local_error.ok() &&
                        t.byte_size() > 0 && heap_->Contains(t.raw_data());
    offsets.push_back(shared ? static_cast<int64_t>(heap_->OffsetOf(t.raw_data())) : -1);
  }
  segment_->PublishBuffers(op.seq, offsets);
}

bool ShmCommunicator::IsEager(const Op& op) const {
  const size_t bytes = static_cast<size_t>(op.count) * DTypeSize(op.dtype);
  return op.kind == CollectiveKind::kAllReduce && op.local_error.ok() && bytes > 0 &&
         bytes <= segment_->eager_slot_bytes();
}

// Slots of parity seq & 1 are free: every peer folded from them in operation seq - 2, before
// arriving at the header exchange of seq - 1, which this rank has passed.
char* ShmCommunicator::EagerSlot(int64_t seq, int local_rank, int c) const {
  return segment_->eager_slot(per_replica_.slot_index(static_cast<int>(seq & 1), local_rank, c));
}

void ShmCommunicator::StageEager(const Op& op) {
  const size_t bytes = static_cast<size_t>(op.count) * DTypeSize(op.dtype);
  const int me = group_.world_rank;
  if (!options_.deterministic && op.inputs.size() > 1) {
    // Fast mode: the local replicas' partial result is this rank's one contribution.
    PreReduceLocal(op.dtype, op.reduce_op, op.inputs, EagerSlot(op.seq, me, 0), op.count);
    return;
  }
  for (size_t c = 0; c < op.inputs.size(); ++c) {
    std::memcpy(EagerSlot(op.seq, me, static_cast<int>(c)), op.inputs[c].raw_data(), bytes);
  }
}

std::vector<const void*> ShmCommunicator::EagerSources(const Op& op) const {
  const int me = group_.world_rank;
  std::vector<const void*> srcs;
  if (options_.deterministic) {
    for (const auto& [r, c] : id_order_) {
      srcs.push_back(r == me ? op.inputs[c].raw_data() : EagerSlot(op.seq, r, c));
    }
  } else {
    // One contribution per rank (fast mode's local partial, or its only replica).
    for (int r = 0; r < group_.world_size; ++r) {
      const bool own_input = r == me && op.inputs.size() == 1;
      srcs.push_back(own_input ? op.inputs[0].raw_data() : EagerSlot(op.seq, r, 0));
    }
  }
  return srcs;
}

Status ShmCommunicator::RunEagerAllReduce(Op& op) {
  std::vector<const void*> srcs = EagerSources(op);
  const size_t bytes = static_cast<size_t>(op.count) * DTypeSize(op.dtype);
  if (group_.world_size >= kEagerSplitMinRanks && bytes >= kEagerSplitMinBytes) {
    return RunSplitEagerAllReduce(op, std::move(srcs));
  }
  // Sources are read before the destinations are written, element by element: in place is fine.
  const std::vector<void*> outs = DataPointers(op.outputs);
  FoldElements(op.dtype, op.reduce_op, srcs.data(), static_cast<int>(srcs.size()), outs.data(),
               static_cast<int>(outs.size()), op.count, group_.num_replicas());
  return Status::OK();
}

// Every rank folding the whole vector reads world_size times its bytes, most of them from other
// cores' caches; folding only its share reads them once, and the copy out once more. The
// result goes to rank 0's first slot, whose share each owner folds in place. That slot's parity
// is next written in operation seq + 2, after every rank has copied this result out.
Status ShmCommunicator::RunSplitEagerAllReduce(Op& op, std::vector<const void*> srcs) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(op.dtype));
  const auto bounds = EvenBounds(op.count, group_.world_size, 64 / esize);
  const int64_t begin = bounds[group_.world_rank];
  for (const void*& s : srcs) s = static_cast<const char*>(s) + begin * esize;
  char* result = EagerSlot(op.seq, 0, 0);
  void* share = result + begin * esize;
  FoldElements(op.dtype, op.reduce_op, srcs.data(), static_cast<int>(srcs.size()), &share, 1,
               bounds[group_.world_rank + 1] - begin, group_.num_replicas());
  TROUPE_RETURN_IF_ERROR(segment_->ArriveAndWait(op.deadline, "eager reduction"));
  for (void* out : DataPointers(op.outputs)) {
    std::memcpy(out, result, static_cast<size_t>(op.count * esize));
  }
  return Status::OK();
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
  if (IsEager(op)) return RunEagerAllReduce(op);
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
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  plan.mean_divisor = group_.num_replicas();
  const std::vector<void*> outs = DataPointers(op.outputs);
  const ShmLayout* layout = &per_replica_;
  // Every rank must pick the same layout, so the choice rests on the whole group: with one
  // replica per process, fast mode's per-process slots are the per-replica ones.
  if (options_.deterministic || group_.num_replicas() == group_.world_size) {
    plan.order = id_order_;
    plan.my_inputs = ConstDataPointers(op.inputs);
  } else {
    // Fast mode: fold the local replicas first (any order), then one contribution per rank.
    PreReduceLocal(op.dtype, op.reduce_op, op.inputs, outs[0], op.count);
    layout = &per_process_;
    for (int r = 0; r < group_.world_size; ++r) plan.order.push_back({r, 0});
    plan.my_inputs = {outs[0]};
  }
  AddAllReduceSegments(op.count, group_.world_size, group_.world_rank, outs, &plan);
  return ShmReduce(*layout, plan, op.deadline);
}

Status ShmCommunicator::Run(Op& op) {
  const size_t bytes = static_cast<size_t>(op.count) * DTypeSize(op.dtype);
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      return RunAllReduce(op);
    case CollectiveKind::kReduceScatter:
      return ShmReduce(per_replica_,
                       ReduceScatterPlan(group_, op.dtype, op.reduce_op, op.count, id_order_,
                                         op.inputs, op.outputs),
                       op.deadline);
    case CollectiveKind::kAllGather:
      return ShmAllGather(per_replica_, group_.replica_ids, ConstDataPointers(op.inputs),
                          DataPointers(op.outputs), bytes, op.deadline);
    case CollectiveKind::kBroadcast: {
      const int root_rank = group_.RankOfReplica(op.root);
      const void* src = root_rank == group_.world_rank
                            ? op.inputs[group_.LocalIndexOfReplica(op.root)].raw_data()
                            : nullptr;
      return ShmBroadcast(per_replica_, root_rank, src, DataPointers(op.outputs), bytes,
                          op.deadline);
    }
    case CollectiveKind::kBarrier:
      return Status::OK();
  }
  return InternalError("unknown collective kind");
}

}  // namespace troupe
