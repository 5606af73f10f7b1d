// ProcessGroup: the topology a Communicator works over, filled in by whoever launched the job
// (mpirun, Slurm, a test). It holds no discovery logic: world rank/size, which processes share
// a host, and the global replica ids each process owns. Replica ids are 0..N-1 over the whole
// job; deterministic reductions add replicas in id order, so they alone define the result.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace troupe {

struct ProcessGroup {
  int world_rank = 0;
  int world_size = 1;
  int local_rank = 0;  // index of this process among those on its host
  int local_size = 1;  // processes on this host
  // host_of_rank[r]: host index (0..H-1) of world rank r. Ranks of a host are listed by local
  // rank in increasing world-rank order.
  std::vector<int> host_of_rank{0};
  // replica_ids[r]: global replica ids held by world rank r, in local-replica order.
  std::vector<std::vector<int>> replica_ids{{0}};

  // One process holding replicas 0..num_replicas-1.
  static ProcessGroup SingleProcess(int num_replicas);
  // world_size ranks, blocks of ranks_per_host consecutive ranks per host, each rank holding
  // replicas_per_rank consecutive ids (rank-major), as mpirun's default by-slot mapping does.
  static Result<ProcessGroup> Uniform(int world_rank, int world_size, int ranks_per_host,
                                      int replicas_per_rank);

  // Checks sizes, that ids 0..N-1 appear exactly once, and that local_rank/local_size agree
  // with host_of_rank. Every Communicator calls it; errors name the offending field.
  Status Validate() const;

  int num_replicas() const;  // N, over all ranks
  int num_local_replicas() const { return static_cast<int>(local_replica_ids().size()); }
  const std::vector<int>& local_replica_ids() const { return replica_ids[world_rank]; }
  int host() const { return host_of_rank[world_rank]; }
  int num_hosts() const;
  // World ranks on `host`, in increasing order (index = local rank).
  std::vector<int> RanksOnHost(int host) const;
  // World rank that holds replica `id`, or -1.
  int RankOfReplica(int id) const;
  // Index of replica `id` in local_replica_ids(), or -1 when this process does not hold it.
  int LocalIndexOfReplica(int id) const;
  // Replicas held by processes on `host`.
  int NumReplicasOnHost(int host) const;

  // "rank 1/4 (host 0, local 1/2), replicas {2,3} of 8".
  std::string ToString() const;
};

// "rank 3" or "ranks 1, 4" (for error messages).
std::string DescribeRanks(const std::vector<int>& ranks);

}  // namespace troupe
