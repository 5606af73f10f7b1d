#include "collectives/mpi/hierarchical_communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "collectives/backend_plans.h"
#include "collectives/mpi/chain_allreduce.h"
#include "collectives/mpi/mpi_bootstrap.h"

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

// Three stages, so that the cross-host pipeline spans this process's whole segment instead of
// one shared-memory piece at a time (a piece-sized pipeline would fill and drain per piece):
// the host's contributions to the segment land in private memory (deterministic: copied as
// they are; fast: folded), cross the hosts, and the result is published through shared memory.
Status HierarchicalCommunicator::RunAllReduce(Op& op) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(op.dtype));
  const std::vector<void*> outs = DataPointers(op.outputs);
  const Deadline deadline = op.deadline;
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  AddAllReduceSegments(op.count, group_.local_size, group_.local_rank, outs, &plan);
  const int64_t begin = plan.segments[group_.local_rank].begin;
  const int64_t n = plan.segments[group_.local_rank].end - begin;
  ReducePlan gather = plan;
  for (auto& s : gather.segments) {
    s.dsts.clear();
    s.publish = false;
  }
  gather.copy_out.clear();
  const ShmLayout* layout = &per_replica_;
  char* result = static_cast<char*>(outs[0]) + begin * esize;  // free once staged
  if (options_.deterministic) {
    gather.order = host_order_;
    gather.my_inputs = ConstDataPointers(op.inputs);
    staging_.resize(static_cast<size_t>(host_order_.size() * n * esize));
    gather.owner_step = [&](int, int64_t offset, int64_t len, const std::vector<const void*>& srcs,
                            const std::vector<void*>&) {
      for (size_t k = 0; k < srcs.size(); ++k) {
        std::memcpy(&staging_[(k * n + offset - begin) * esize], srcs[k], len * esize);
      }
      return Status::OK();
    };
  } else {
    const ReduceOp local = op.reduce_op == ReduceOp::kMean ? ReduceOp::kSum : op.reduce_op;
    PreReduceLocal(op.dtype, op.reduce_op, op.inputs, outs[0], op.count);
    layout = &per_process_;
    for (int r = 0; r < group_.local_size; ++r) gather.order.push_back({r, 0});
    gather.my_inputs = {outs[0]};
    staging_.resize(static_cast<size_t>(n * esize));
    gather.owner_step = [&, local](int, int64_t offset, int64_t len,
                                   const std::vector<const void*>& srcs,
                                   const std::vector<void*>&) {
      void* dst = &staging_[(offset - begin) * esize];
      FoldElements(op.dtype, local, srcs.data(), static_cast<int>(srcs.size()), &dst, 1, len, 1);
      return Status::OK();
    };
  }
  TROUPE_RETURN_IF_ERROR(ShmReduce(*layout, gather, deadline));
  TROUPE_RETURN_IF_ERROR(CrossHosts(op, n, result, deadline));
  // Publish: the owner copies its result into its outputs and the result slot; no inputs.
  plan.owner_step = [&](int, int64_t offset, int64_t len, const std::vector<const void*>&,
                        const std::vector<void*>& dsts) {
    const char* src = result + (offset - begin) * esize;
    for (void* d : dsts) {
      if (d != src) std::memcpy(d, src, len * esize);
    }
    return Status::OK();
  };
  return ShmReduce(per_process_, plan, deadline);
}

Status HierarchicalCommunicator::CrossHosts(const Op& op, int64_t n, void* result,
                                            Deadline deadline) {
  const int64_t esize = static_cast<int64_t>(DTypeSize(op.dtype));
  ChainArgs args;
  args.dtype = op.dtype;
  args.op = op.reduce_op;
  args.mean_divisor = group_.num_replicas();
  args.count = n;
  args.piece_elems = ChainPieceElems(n, static_cast<size_t>(esize), options_.cross_piece_bytes);
  args.result = result;
  if (options_.deterministic) {
    args.runs = runs_;
    for (size_t k = 0; k < host_order_.size(); ++k) {
      args.contributions.push_back(&staging_[k * n * esize]);
    }
  } else {
    // Fast mode: each host's pre-folded sum is its one contribution, hosts in index order.
    // The same pipeline as the deterministic chain, which beats MPI_Iallreduce here: OpenMPI's
    // non-blocking schedule moves one round per poll and does not pipeline across hosts.
    for (int h = 0; h < cross_->size(); ++h) args.runs.push_back({h, 0, 1});
    args.contributions.push_back(staging_.data());
  }
  return ChainAllReduce(*cross_, args, deadline);
}

}  // namespace troupe
