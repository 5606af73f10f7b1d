// HierarchicalCommunicator: allreduce in three stages. Local rank i of every host owns segment i
// of the data, so all processes of a host use the network at once. (1) Through shared memory,
// the owner gathers its host's contributions to its segment into private memory (fast mode:
// each process pre-reduces its replicas and the owner folds the host's sums). (2) Across hosts,
// ChainAllReduce (chain_allreduce.h) over the owners of the same segment: the partial sum
// travels host to host in pieces, pipelined, and the last host's result is spread as an
// allgather, every host sending 2(H-1)/H of the segment like a ring. Deterministic mode folds
// the replicas onto the partial in global id order (bits equal every other backend's); fast
// mode chains the host sums. (3) Through shared memory, the owner publishes its result.
// Costs private memory: the host's contributions to the segment (deterministic) and 16 pieces.
// 4 emulated hosts x 2 ranks on 1 Gbit/s links (bench/cluster_allreduce.sh, quiet machine):
// busbw 0.11-0.14 GB/s (the links allow ~0.14 for this scheme), 1.06-1.34x raw MPI_Allreduce
// at 1-4 MiB, where latency weighs most, and 1.4-1.6x at 16-64 MiB.
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
