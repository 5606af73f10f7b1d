// MpiCommunicator: collectives across processes through MPI (OpenMPI). Deterministic mode runs
// Troupe's own reduce-scatter + allgather over non-blocking point-to-point messages: the owner
// of each segment receives every replica's piece and folds them in global-replica-id order.
// Fast mode pre-reduces local replicas and calls MPI_Iallreduce. All calls are non-blocking
// and polled against the deadline on the communicator's progress thread (MPI must be
// initialised with MPI_THREAD_MULTIPLE, see InitMpi); MPI errors are returned, never fatal.
#pragma once

#include <mpi.h>

#include <memory>

#include "collectives/communicator.h"
#include "collectives/mpi/mpi_channel.h"

namespace troupe {

class MpiCommunicator : public Communicator {
 public:
  // `comm` is duplicated; its ranks must be the group's world ranks (same size and order).
  // Collective over `comm`.
  static Result<std::unique_ptr<MpiCommunicator>> Create(ProcessGroup group,
                                                         CollectiveOptions options,
                                                         MPI_Comm comm = MPI_COMM_WORLD);
  ~MpiCommunicator() override;
  std::string backend() const override { return "mpi"; }

 protected:
  // `channel` spans the group's world ranks, in order.
  MpiCommunicator(ProcessGroup group, CollectiveOptions options,
                  std::unique_ptr<MpiChannel> channel);
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                         std::vector<OpHeader>* all) override;
  // Broadcast, allgather and reduce_scatter over `channel_`; allreduce through RunAllReduce.
  Status Run(Op& op) override;
  // The hierarchical backend (a subclass) replaces it with its staged allreduce.
  virtual Status RunAllReduce(Op& op);

  std::unique_ptr<MpiChannel> channel_;        // every world rank
  std::vector<std::pair<int, int>> id_order_;  // (rank, local index) by replica id
};

// Checks that MPI was initialised with MPI_THREAD_MULTIPLE and that `comm` matches `group`.
Status CheckMpiMatchesGroup(MPI_Comm comm, const ProcessGroup& group);

}  // namespace troupe
