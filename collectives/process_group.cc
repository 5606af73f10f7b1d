#include "collectives/process_group.h"

#include <algorithm>
#include <set>

namespace troupe {

ProcessGroup ProcessGroup::SingleProcess(int num_replicas) {
  ProcessGroup g;
  g.replica_ids = {{}};
  for (int i = 0; i < num_replicas; ++i) g.replica_ids[0].push_back(i);
  return g;
}

Result<ProcessGroup> ProcessGroup::Uniform(int world_rank, int world_size, int ranks_per_host,
                                           int replicas_per_rank) {
  if (world_size < 1 || ranks_per_host < 1 || replicas_per_rank < 1 ||
      world_size % ranks_per_host != 0 || world_rank < 0 || world_rank >= world_size) {
    return InvalidArgumentError(
        "ProcessGroup::Uniform: need 0 <= world_rank < world_size, world_size a multiple of "
        "ranks_per_host, replicas_per_rank >= 1; got world_rank=" +
        std::to_string(world_rank) + " world_size=" + std::to_string(world_size) +
        " ranks_per_host=" + std::to_string(ranks_per_host) +
        " replicas_per_rank=" + std::to_string(replicas_per_rank));
  }
  ProcessGroup g;
  g.world_rank = world_rank;
  g.world_size = world_size;
  g.local_rank = world_rank % ranks_per_host;
  g.local_size = ranks_per_host;
  g.host_of_rank.resize(static_cast<size_t>(world_size));
  g.replica_ids.assign(static_cast<size_t>(world_size), {});
  for (int r = 0; r < world_size; ++r) {
    g.host_of_rank[r] = r / ranks_per_host;
    for (int i = 0; i < replicas_per_rank; ++i)
      g.replica_ids[r].push_back(r * replicas_per_rank + i);
  }
  return g;
}

Status ProcessGroup::Validate() const {
  auto bad = [&](const std::string& what) {
    return InvalidArgumentError("invalid ProcessGroup (" + what + "); fix the launcher's topology");
  };
  if (world_size < 1) return bad("world_size=" + std::to_string(world_size) + " < 1");
  if (world_rank < 0 || world_rank >= world_size) {
    return bad("world_rank=" + std::to_string(world_rank) + " outside [0, " +
               std::to_string(world_size) + ")");
  }
  if (static_cast<int>(host_of_rank.size()) != world_size) {
    return bad("host_of_rank has " + std::to_string(host_of_rank.size()) +
               " entries for world_size " + std::to_string(world_size));
  }
  if (static_cast<int>(replica_ids.size()) != world_size) {
    return bad("replica_ids has " + std::to_string(replica_ids.size()) +
               " entries for world_size " + std::to_string(world_size));
  }
  int hosts = 0;
  for (int h : host_of_rank) {
    if (h < 0 || h >= world_size) return bad("host index " + std::to_string(h) + " out of range");
    hosts = std::max(hosts, h + 1);
  }
  for (int h = 0; h < hosts; ++h) {
    if (RanksOnHost(h).empty()) return bad("host indices skip host " + std::to_string(h));
  }
  std::vector<int> mine = RanksOnHost(host());
  const int expected_local =
      static_cast<int>(std::find(mine.begin(), mine.end(), world_rank) - mine.begin());
  if (local_size != static_cast<int>(mine.size()) || local_rank != expected_local) {
    return bad("local_rank/local_size " + std::to_string(local_rank) + "/" +
               std::to_string(local_size) + " disagree with host_of_rank, which gives " +
               std::to_string(expected_local) + "/" + std::to_string(mine.size()));
  }
  std::set<int> seen;
  int total = 0;
  for (int r = 0; r < world_size; ++r) {
    if (replica_ids[r].empty()) return bad("rank " + std::to_string(r) + " holds no replica");
    for (int id : replica_ids[r]) {
      if (!seen.insert(id).second) return bad("replica id " + std::to_string(id) + " repeated");
      ++total;
    }
  }
  if (*seen.begin() != 0 || *seen.rbegin() != total - 1) {
    return bad("replica ids must be exactly 0.." + std::to_string(total - 1));
  }
  return Status::OK();
}

int ProcessGroup::num_replicas() const {
  int n = 0;
  for (const auto& ids : replica_ids) n += static_cast<int>(ids.size());
  return n;
}

int ProcessGroup::num_hosts() const {
  int h = 0;
  for (int x : host_of_rank) h = std::max(h, x + 1);
  return h;
}

std::vector<int> ProcessGroup::RanksOnHost(int h) const {
  std::vector<int> out;
  for (int r = 0; r < static_cast<int>(host_of_rank.size()); ++r) {
    if (host_of_rank[r] == h) out.push_back(r);
  }
  return out;
}

int ProcessGroup::RankOfReplica(int id) const {
  for (int r = 0; r < static_cast<int>(replica_ids.size()); ++r) {
    for (int x : replica_ids[r]) {
      if (x == id) return r;
    }
  }
  return -1;
}

int ProcessGroup::LocalIndexOfReplica(int id) const {
  const auto& ids = local_replica_ids();
  const auto it = std::find(ids.begin(), ids.end(), id);
  return it == ids.end() ? -1 : static_cast<int>(it - ids.begin());
}

int ProcessGroup::NumReplicasOnHost(int h) const {
  int n = 0;
  for (int r : RanksOnHost(h)) n += static_cast<int>(replica_ids[r].size());
  return n;
}

std::string ProcessGroup::ToString() const {
  std::string ids;
  for (int id : local_replica_ids()) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return "rank " + std::to_string(world_rank) + "/" + std::to_string(world_size) + " (host " +
         std::to_string(host()) + ", local " + std::to_string(local_rank) + "/" +
         std::to_string(local_size) + "), replicas {" + ids + "} of " +
         std::to_string(num_replicas());
}

std::string DescribeRanks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace troupe
