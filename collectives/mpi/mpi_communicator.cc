#include "collectives/mpi/mpi_communicator.h"

#include <numeric>

#include "collectives/backend_plans.h"
#include "collectives/in_process_communicator.h"
#include "collectives/mpi/mpi_bootstrap.h"
#include "collectives/mpi/mpi_collectives.h"

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
    : Communicator(std::move(group), options),
      channel_(std::move(channel)),
      id_order_(ReplicaFoldOrder(group_)) {}

MpiCommunicator::~MpiCommunicator() { Shutdown(); }

Status MpiCommunicator::ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                        std::vector<OpHeader>* all) {
  return channel_->ExchangeHeaders(mine, deadline, all);
}

Status MpiCommunicator::RunAllReduce(Op& op) {
  const int n = group_.num_replicas();
  const size_t esize = DTypeSize(op.dtype);
  const std::vector<void*> outs = DataPointers(op.outputs);
  ReducePlan plan;
  plan.dtype = op.dtype;
  plan.op = op.reduce_op;
  plan.mean_divisor = n;
  if (options_.deterministic) {
    plan.order = id_order_;
    plan.my_inputs = ConstDataPointers(op.inputs);
  } else {
    // Fast mode: pre-reduce the local replicas, then one contribution per rank. Small messages
    // go to MPI's latency-optimised allreduce; large ones to the pipelined owner-fold below,
    // which moves the same bytes as a ring and beats OpenMPI's non-blocking allreduce there.
    PreReduceLocal(op.dtype, op.reduce_op, op.inputs, outs[0], op.count);
    if (static_cast<size_t>(op.count) * esize < kNativeAllReduceBytes) {
      TROUPE_RETURN_IF_ERROR(
          MpiNativeAllReduce(*channel_, op.dtype, op.reduce_op, outs[0], op.count, n, op.deadline));
      ParallelCopy(outs[0], outs, static_cast<size_t>(op.count) * esize);
      return Status::OK();
    }
    for (int r = 0; r < group_.world_size; ++r) plan.order.push_back({r, 0});
    plan.my_inputs = {outs[0]};
  }
  AddAllReduceSegments(op.count, group_.world_size, group_.world_rank, outs, &plan);
  return MpiReduce(*channel_, plan, static_cast<int64_t>(options_.piece_bytes / esize),
                   op.deadline);
}

Status MpiCommunicator::Run(Op& op) {
  const size_t esize = DTypeSize(op.dtype);
  const size_t bytes = static_cast<size_t>(op.count) * esize;
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      return RunAllReduce(op);
    case CollectiveKind::kReduceScatter:
      return MpiReduce(*channel_,
                       ReduceScatterPlan(group_, op.dtype, op.reduce_op, op.count, id_order_,
                                         op.inputs, op.outputs),
                       static_cast<int64_t>(options_.piece_bytes / esize), op.deadline);
    case CollectiveKind::kAllGather:
      return MpiAllGather(*channel_, group_.replica_ids, ConstDataPointers(op.inputs),
                          DataPointers(op.outputs), bytes, op.deadline);
    case CollectiveKind::kBroadcast:
      return MpiBroadcastReplica(*channel_, group_, op.root, DataPointers(op.outputs), bytes,
                                 op.deadline);
    case CollectiveKind::kBarrier:
      return Status::OK();
  }
  return InternalError("unknown collective kind");
}

}  // namespace troupe
