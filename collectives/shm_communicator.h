// ShmCommunicator: collectives among the processes of one host through a POSIX shared-memory
// segment, as NCCL does inside a node. Each reduction segment has an owner process that folds
// every replica's piece in global-replica-id order straight from the shared slots (and its own
// buffers) and publishes the result; everyone copies it out. One barrier per piece. A peer that
// dies is noticed by pid within ~20 ms and named; a stuck one is named at the timeout.
#pragma once

#include <memory>
#include <string>

#include "collectives/communicator.h"
#include "collectives/shm_collectives.h"

namespace troupe {

class ShmCommunicator : public Communicator {
 public:
  // Every rank of `group` must be on one host. `segment_name` ("/troupe-<token>") must be the
  // same on all ranks and unique to this job (see MakeJobToken in mpi_bootstrap.h). Blocks
  // until every local rank has joined, or fails at options.timeout naming who is missing.
  static Result<std::unique_ptr<ShmCommunicator>> Create(ProcessGroup group,
                                                         CollectiveOptions options,
                                                         std::string segment_name);
  ~ShmCommunicator() override;
  std::string backend() const override { return "shm"; }

 protected:
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                         std::vector<OpHeader>* all) override;
  Status Run(Op& op) override;

 private:
  ShmCommunicator(ProcessGroup group, CollectiveOptions options,
                  std::unique_ptr<ShmSegment> segment);
  Status RunAllReduce(Op& op);
  Status RunReduceScatter(Op& op);

  std::unique_ptr<ShmSegment> segment_;
  ShmLayout per_replica_;  // one slot per replica
  ShmLayout per_process_;  // one slot per process (fast mode's pre-reduced contribution)
  std::vector<std::pair<int, int>> id_order_;  // (local rank, local index) by replica id
};

// Contributions of the ranks in `ranks` listed in global-replica-id order:
// (index into ranks, local replica index).
std::vector<std::pair<int, int>> ReplicaFoldOrder(const ProcessGroup& group,
                                                  const std::vector<int>& ranks);

}  // namespace troupe
