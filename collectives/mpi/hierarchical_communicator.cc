#include "collectives/mpi/hierarchical_communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "collectives/backend_plans.h"
#include "collectives/mpi/mpi_bootstrap.h"
#include "collectives/mpi/mpi_collectives.h"

namespace troupe {

Result<std::unique_ptr<HierarchicalCommunicator>> HierarchicalCommunicator::Create(
    ProcessGroup group, CollectiveOptions options, MPI_Comm comm,
    const std::string& segment_prefix) {
  TROUPE_RETURN_IF_ERROR(group.Validate());
  TROUPE_RETURN_IF_ERROR(CheckMpiMatchesGroup(comm, group));
  for (int h = 0; h < group.num_hosts(); ++h) {
    if (static_cast<int>(group.RanksOnHost(h).size()) != group.local_size) {
      return InvalidArgumentError("hierarchical communicator: host " + std::to_string(h) +
                                  " runs " + std::to_string(group.RanksOnHost(h).size()) +
                                  " processes but this host runs " +
                                  std::to_string(group.local_size) +
                                  "; start the same number per host or use the MPI backend");
    }
  }
  const Deadline deadline = DeadlineAfter(options.timeout);
  std::vector<int> world(static_cast<size_t>(group.world_size));
  std::iota(world.begin(), world.end(), 0);
  TROUPE_ASSIGN_OR_RETURN(auto world_channel, MpiChannel::Create(comm, world, deadline));
  std::unique_ptr<HierarchicalCommunicator> c(
      new HierarchicalCommunicator(group, options, std::move(world_channel)));
  // Cross-host channel: same local rank on every host, ordered by host index.
  MPI_Comm cross;
  int rc = MPI_Comm_split(comm, group.local_rank, group.host(), &cross);
  if (rc != MPI_SUCCESS) return UnavailableError("MPI_Comm_split: " + MpiErrorString(rc));
  std::vector<int> cross_world;
  for (int h = 0; h < group.num_hosts(); ++h) {
    cross_world.push_back(group.RanksOnHost(h)[group.local_rank]);
  }
  auto channel = MpiChannel::Create(cross, cross_world, deadline);
  MPI_Comm_free(&cross);
  if (!channel.ok()) return channel.status();
  c->cross_ = std::move(*channel);

  std::vector<int> per_rank;
  for (int r : c->host_ranks_) per_rank.push_back(static_cast<int>(group.replica_ids[r].size()));
  ShmSegment::Params params;
  params.name = segment_prefix + "-s" + std::to_string(NextSegmentSequence()) + "-h" +
                std::to_string(group.host());
  params.local_rank = group.local_rank;
  params.local_size = group.local_size;
  params.num_slots = ShmLayout::SlotsNeeded(per_rank);
  params.slot_bytes = options.piece_bytes;
  params.world_ranks = c->host_ranks_;
  TROUPE_ASSIGN_OR_RETURN(c->segment_, ShmSegment::Join(params, deadline));
  c->per_replica_.segment = c->segment_.get();
  c->per_process_.segment = c->segment_.get();
  c->per_replica_.contributions = per_rank;
  c->per_process_.contributions.assign(per_rank.size(), 1);
  return c;
}

HierarchicalCommunicator::HierarchicalCommunicator(ProcessGroup group, CollectiveOptions options,
                                                   std::unique_ptr<MpiChannel> world)
    : MpiCommunicator(std::move(group), options, std::move(world)) {
  host_ranks_ = group_.RanksOnHost(group_.host());
  host_order_ = ReplicaFoldOrder(group_, host_ranks_);
  // Runs of consecutive replica ids on one host, in id order; [begin, end) index that host's
  // contributions in its own fold order.
  std::vector<int> next_on_host(static_cast<size_t>(group_.num_hosts()), 0);
  for (const auto& [r, c] : id_order_) {
    const int h = group_.host_of_rank[r];
    if (runs_.empty() || runs_.back().host != h) {
      runs_.push_back({h, next_on_host[h], next_on_host[h]});
    }
    ++runs_.back().end;
    ++next_on_host[h];
  }
}

HierarchicalCommunicator::~HierarchicalCommunicator() { Shutdown(); }

Status HierarchicalCommunicator::ChainStep(const Op& op, int64_t n,
                                           const std::vector<const void*>& srcs,
                                           const std::vector<void*>& dsts, Deadline deadline) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(op.dtype));
  const int me = group_.host();
  void* acc = dsts.back();  // the published result slot
  chain_buffer_.resize(static_cast<size_t>(n * esize));
  const ReduceOp partial_op = op.reduce_op == ReduceOp::kMean ? ReduceOp::kSum : op.reduce_op;
  for (size_t t = 0; t < runs_.size(); ++t) {
    const Run_& run = runs_[t];
    if (run.host != me) continue;
    std::vector<const void*> fold;
    if (t > 0) {
      MpiChannel::Batch b(cross_.get());
      TROUPE_RETURN_IF_ERROR(
          b.Recv(chain_buffer_.data(), n * esize, runs_[t - 1].host, MpiChannel::kTagChain));
      TROUPE_RETURN_IF_ERROR(cross_->Wait(b, deadline, "chain reduction (partial sum)"));
      fold.push_back(chain_buffer_.data());
    }
    for (int i = run.begin; i < run.end; ++i) fold.push_back(srcs[i]);
    const bool last = t + 1 == runs_.size();
    FoldElements(op.dtype, last ? op.reduce_op : partial_op, fold.data(),
                 static_cast<int>(fold.size()), &acc, 1, n, last ? group_.num_replicas() : 1);
    if (!last) {
      MpiChannel::Batch b(cross_.get());
      TROUPE_RETURN_IF_ERROR(b.Send(acc, n * esize, runs_[t + 1].host, MpiChannel::kTagChain));
      TROUPE_RETURN_IF_ERROR(cross_->Wait(b, deadline, "chain reduction (partial sum)"));
    }
  }
  if (cross_->size() > 1) {
    TROUPE_RETURN_IF_ERROR(
        MpiBroadcast(*cross_, runs_.back().host, acc, static_cast<size_t>(n * esize), deadline));
  }
  for (size_t d = 0; d + 1 < dsts.size(); ++d) std::memcpy(dsts[d], acc, n * esize);
  return Status::OK();
}

Status HierarchicalCommunicator::RunAllReduce(Op& op) {
  const size_t esize = DTypeSize(op.dtype);
  const std::vector<void*> outs = DataPointers(op.outputs);
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  const ShmLayout* layout = &per_replica_;
  const Deadline deadline = op.deadline;
  if (options_.deterministic) {
    plan.order = host_order_;
    plan.my_inputs = ConstDataPointers(op.inputs);
    plan.owner_step = [&](int, int64_t, int64_t n, const std::vector<const void*>& srcs,
                          const std::vector<void*>& dsts) {
      return ChainStep(op, n, srcs, dsts, deadline);
    };
  } else {
    const ReduceOp local = op.reduce_op == ReduceOp::kMean ? ReduceOp::kSum : op.reduce_op;
    PreReduceLocal(op.dtype, op.reduce_op, op.inputs, outs[0], op.count);
    layout = &per_process_;
    for (int r = 0; r < group_.local_size; ++r) plan.order.push_back({r, 0});
    plan.my_inputs = {outs[0]};
    plan.owner_step = [&, local](int, int64_t, int64_t n, const std::vector<const void*>& srcs,
                                 const std::vector<void*>& dsts) -> Status {
      void* acc = dsts.back();
      FoldElements(op.dtype, local, srcs.data(), static_cast<int>(srcs.size()), &acc, 1, n, 1);
      if (cross_->size() > 1) {
        TROUPE_RETURN_IF_ERROR(MpiNativeAllReduce(*cross_, op.dtype, op.reduce_op, acc, n,
                                                  group_.num_replicas(), deadline));
      } else if (op.reduce_op == ReduceOp::kMean) {
        DivideElements(op.dtype, acc, n, group_.num_replicas());
      }
      for (size_t d = 0; d + 1 < dsts.size(); ++d) std::memcpy(dsts[d], acc, n * esize);
      return Status::OK();
    };
  }
  AddAllReduceSegments(op.count, group_.local_size, group_.local_rank, outs, &plan);
  return ShmReduce(*layout, plan, op.deadline);
}

}  // namespace troupe
