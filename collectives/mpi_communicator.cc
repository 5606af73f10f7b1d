#include "collectives/mpi_communicator.h"

#include <algorithm>
#include <numeric>

#include "collectives/in_process_communicator.h"
#include "collectives/mpi_bootstrap.h"
#include "collectives/mpi_collectives.h"
#include "collectives/shm_communicator.h"

namespace troupe {
namespace {

// Below this, fast mode uses MPI_Iallreduce (recursive doubling wins on latency).
constexpr size_t kNativeAllReduceBytes = 256 << 10;

}  // namespace

Status CheckMpiMatchesGroup(MPI_Comm comm, const ProcessGroup& group) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    return FailedPreconditionError("MPI is not initialised; call InitMpi(&argc, &argv) first");
  }
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    return FailedPreconditionError(
        "MPI was initialised without MPI_THREAD_MULTIPLE; collectives poll MPI from their own "
        "progress thread. Initialise with InitMpi() or MPI_Init_thread(MPI_THREAD_MULTIPLE)");
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank != group.world_rank || size != group.world_size) {
    return InvalidArgumentError("MPI communicator has rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " but the ProcessGroup says rank " +
                                std::to_string(group.world_rank) + " of " +
                                std::to_string(group.world_size));
  }
  return Status::OK();
}

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(ProcessGroup group,
                                                                 CollectiveOptions options,
                                                                 MPI_Comm comm) {
  TROUPE_RETURN_IF_ERROR(group.Validate());
  TROUPE_RETURN_IF_ERROR(CheckMpiMatchesGroup(comm, group));
  std::vector<int> world(static_cast<size_t>(group.world_size));
  std::iota(world.begin(), world.end(), 0);
  TROUPE_ASSIGN_OR_RETURN(auto channel,
                          MpiChannel::Create(comm, world, DeadlineAfter(options.timeout)));
  return std::unique_ptr<MpiCommunicator>(
      new MpiCommunicator(std::move(group), options, std::move(channel)));
}

MpiCommunicator::MpiCommunicator(ProcessGroup group, CollectiveOptions options,
                                 std::unique_ptr<MpiChannel> channel)
    : Communicator(std::move(group), options), channel_(std::move(channel)) {
  std::vector<int> ranks(static_cast<size_t>(group_.world_size));
  std::iota(ranks.begin(), ranks.end(), 0);
  id_order_ = ReplicaFoldOrder(group_, ranks);
}

MpiCommunicator::~MpiCommunicator() { Shutdown(); }

Status MpiCommunicator::ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                        std::vector<OpHeader>* all) {
  return channel_->ExchangeHeaders(mine, deadline, all);
}

Status MpiCommunicator::RunAllReduce(Op& op) {
  const int n = group_.num_replicas();
  const int k = group_.world_size;
  const int me = group_.world_rank;
  const size_t esize = DTypeSize(op.dtype);
  std::vector<void*> outs;
  for (const Tensor& t : op.outputs) outs.push_back(t.raw_data());
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  plan.mean_divisor = n;
  if (options_.deterministic) {
    plan.order = id_order_;
    for (const Tensor& t : op.inputs) plan.my_inputs.push_back(t.raw_data());
  } else {
    // Fast mode: pre-reduce the local replicas, then one contribution per rank. Small messages
    // go to MPI's latency-optimised allreduce; large ones to the pipelined owner-fold below,
    // which moves the same bytes as a ring and beats OpenMPI's non-blocking allreduce there.
    if (outs.size() > 1) {
      std::vector<const void*> srcs;
      for (const Tensor& t : op.inputs) srcs.push_back(t.raw_data());
      const ReduceOp local = op.reduce_op == ReduceOp::kMean ? ReduceOp::kSum : op.reduce_op;
      ParallelFold(op.dtype, local, srcs, {outs[0]}, op.count, 1);
    }
    if (static_cast<size_t>(op.count) * esize < kNativeAllReduceBytes) {
      TROUPE_RETURN_IF_ERROR(
          MpiNativeAllReduce(*channel_, op.dtype, op.reduce_op, outs[0], op.count, n, op.deadline));
      ParallelCopy(outs[0], outs, static_cast<size_t>(op.count) * esize);
      return Status::OK();
    }
    for (int r = 0; r < k; ++r) plan.order.push_back({r, 0});
    plan.my_inputs = {outs[0]};
  }
  const auto bounds = EvenBounds(op.count, k, 64 / static_cast<int64_t>(esize));
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
  return MpiReduce(*channel_, plan, static_cast<int64_t>(options_.piece_bytes / esize),
                   op.deadline);
}

Status MpiCommunicator::RunReduceScatter(Op& op) {
  const int n = group_.num_replicas();
  const int64_t chunk = op.count / n;
  const size_t esize = DTypeSize(op.dtype);
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
      const auto it = std::find(my_ids.begin(), my_ids.end(), g);
      s.dsts.push_back(op.outputs[it - my_ids.begin()].raw_data());
    }
    plan.segments.push_back(std::move(s));
  }
  return MpiReduce(*channel_, plan, static_cast<int64_t>(options_.piece_bytes / esize),
                   op.deadline);
}

Status MpiCommunicator::Run(Op& op) {
  const size_t bytes = static_cast<size_t>(op.count) * DTypeSize(op.dtype);
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
      return MpiAllGather(*channel_, group_.replica_ids, ins, outs, bytes, op.deadline);
    }
    case CollectiveKind::kBroadcast: {
      const int root_rank = group_.RankOfReplica(op.root);
      void* buffer = op.outputs[0].raw_data();
      if (root_rank == group_.world_rank) {
        const auto& ids = group_.local_replica_ids();
        buffer = op.outputs[std::find(ids.begin(), ids.end(), op.root) - ids.begin()].raw_data();
      }
      TROUPE_RETURN_IF_ERROR(MpiBroadcast(*channel_, root_rank, buffer, bytes, op.deadline));
      std::vector<void*> outs;
      for (const Tensor& t : op.outputs) outs.push_back(t.raw_data());
      ParallelCopy(buffer, outs, bytes);
      return Status::OK();
    }
    case CollectiveKind::kBarrier:
      return Status::OK();
  }
  return InternalError("unknown collective kind");
}

}  // namespace troupe
