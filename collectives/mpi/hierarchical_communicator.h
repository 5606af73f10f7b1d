// HierarchicalCommunicator: allreduce in stages — the replicas of a process, then the processes
// of a host through shared memory, then across hosts through MPI — and the result broadcast
// back. Local rank i of every host owns segment i of the data, so all processes of a host use
// the network at once (as NCCL's tree/ring per channel does).
//  - Fast mode: each process pre-reduces its replicas, the segment owner folds the host's
//    contributions and runs MPI_Iallreduce with its peers on the other hosts.
//  - Deterministic mode: the global fold order (replica ids) is cut into runs of consecutive
//    ids living on one host; the partial sum of a segment travels host to host along those
//    runs (each host folds its run in id order onto it), and the host holding the last run
//    broadcasts the result. Bits equal every other backend's; cross-host traffic stays one
//    partial per hop instead of one message per replica.
// broadcast, allgather and reduce_scatter run over MPI across all ranks, as in MpiCommunicator
// (which this class extends with the staged allreduce).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/mpi/chain_allreduce.h"
#include "collectives/mpi/mpi_channel.h"
#include "collectives/mpi/mpi_communicator.h"
#include "collectives/shm_collectives.h"

namespace troupe {

class HierarchicalCommunicator : public MpiCommunicator {
 public:
  // Every host must run the same number of processes. `segment_prefix` ("/troupe-<token>",
  // see MakeJobToken) must be the same on all ranks; each host's segment appends "-h<host>".
  // Collective over `comm`, whose ranks are the group's world ranks.
  static Result<std::unique_ptr<HierarchicalCommunicator>> Create(
      ProcessGroup group, CollectiveOptions options, MPI_Comm comm,
      const std::string& segment_prefix);
  ~HierarchicalCommunicator() override;
  std::string backend() const override { return "hierarchical"; }

 protected:
  Status RunAllReduce(Op& op) override;

 private:
  HierarchicalCommunicator(ProcessGroup group, CollectiveOptions options,
                           std::unique_ptr<MpiChannel> world);
  // The cross-host stage of this process's segment (n elements, staged in staging_):
  // leaves the result in `result` on every host.
  Status CrossHosts(const Op& op, int64_t n, void* result, Deadline deadline);

  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<MpiChannel> cross_;  // local rank i of every host, ordered by host
  ShmLayout per_replica_;
  ShmLayout per_process_;
  std::vector<int> host_ranks_;                  // world ranks on this host
  std::vector<std::pair<int, int>> host_order_;  // host contributions by replica id
  std::vector<ChainRun> runs_;                   // deterministic chain over hosts
  std::vector<char> staging_;  // this host's contributions to my segment (fast: their sum)
};

}  // namespace troupe
