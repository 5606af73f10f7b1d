#include "collectives/mpi/mpi_bootstrap.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "collectives/job_processes.h"

namespace troupe {

std::string MpiErrorString(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<size_t>(len));
}

Status InitMpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      return UnavailableError("MPI_Init_thread failed; run under mpirun or srun --mpi=pmix");
    }
  } else {
    MPI_Query_thread(&provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_MULTIPLE) {
    return FailedPreconditionError(
        "MPI provides thread level " + std::to_string(provided) +
        " but collectives need MPI_THREAD_MULTIPLE (each communicator polls MPI from its own "
        "progress thread); use an MPI built with thread support (Debian's OpenMPI has it)");
  }
  return Status::OK();
}

void FinalizeMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

Status WaitMpiRequest(MPI_Request* request, Deadline deadline, const std::string& what) {
  for (int spins = 0;; ++spins) {
    int done = 0;
    MPI_Status status;
    const int rc = MPI_Test(request, &done, &status);
    if (rc != MPI_SUCCESS) return UnavailableError(what + ": " + MpiErrorString(rc));
    if (done) return Status::OK();
    if (CollectiveClock::now() > deadline) {
      return DeadlineExceededError(what + ": not every rank arrived in time");
    }
    if (spins > 256) sched_yield();
  }
}

Result<ProcessGroup> ProcessGroupFromMpi(MPI_Comm comm, int replicas_per_rank,
                                         int ranks_per_fake_host,
                                         std::chrono::milliseconds timeout) {
  const Deadline deadline = DeadlineAfter(timeout);
  if (replicas_per_rank < 1) {
    return InvalidArgumentError("ProcessGroupFromMpi: replicas_per_rank must be >= 1, got " +
                                std::to_string(replicas_per_rank));
  }
  ProcessGroup g;
  MPI_Comm_rank(comm, &g.world_rank);
  MPI_Comm_size(comm, &g.world_size);
  if (ranks_per_fake_host > 0 && g.world_size % ranks_per_fake_host != 0) {
    return InvalidArgumentError("ProcessGroupFromMpi: " + std::to_string(g.world_size) +
                                " ranks do not split into fake hosts of " +
                                std::to_string(ranks_per_fake_host));
  }
  // Host key = lowest world rank sharing memory with this one.
  int host_key = g.world_rank;
  if (ranks_per_fake_host > 0) {
    host_key = g.world_rank / ranks_per_fake_host * ranks_per_fake_host;
  } else {
    // Everyone is here before the blocking split (MPI has no non-blocking one).
    MPI_Request arrived;
    MPI_Ibarrier(comm, &arrived);
    TROUPE_RETURN_IF_ERROR(WaitMpiRequest(&arrived, deadline, "ProcessGroupFromMpi"));
    MPI_Comm shared;
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, g.world_rank, MPI_INFO_NULL, &shared);
    if (rc != MPI_SUCCESS) return UnavailableError("MPI_Comm_split_type: " + MpiErrorString(rc));
    int first = g.world_rank;
    MPI_Request req;
    MPI_Iallreduce(&g.world_rank, &first, 1, MPI_INT, MPI_MIN, shared, &req);
    Status st = WaitMpiRequest(&req, deadline, "ProcessGroupFromMpi (host leader)");
    MPI_Comm_free(&shared);
    TROUPE_RETURN_IF_ERROR(st);
    host_key = first;
  }
  std::vector<int> keys(static_cast<size_t>(g.world_size));
  MPI_Request gather;
  int rc = MPI_Iallgather(&host_key, 1, MPI_INT, keys.data(), 1, MPI_INT, comm, &gather);
  if (rc != MPI_SUCCESS) return UnavailableError("MPI_Iallgather: " + MpiErrorString(rc));
  TROUPE_RETURN_IF_ERROR(WaitMpiRequest(&gather, deadline, "ProcessGroupFromMpi (hosts)"));
  std::vector<int> distinct = keys;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  g.host_of_rank.resize(keys.size());
  for (size_t r = 0; r < keys.size(); ++r) {
    g.host_of_rank[r] = static_cast<int>(
        std::lower_bound(distinct.begin(), distinct.end(), keys[r]) - distinct.begin());
  }
  const auto mine = g.RanksOnHost(g.host());
  g.local_size = static_cast<int>(mine.size());
  g.local_rank = static_cast<int>(std::find(mine.begin(), mine.end(), g.world_rank) - mine.begin());
  g.replica_ids.assign(keys.size(), {});
  for (int r = 0; r < g.world_size; ++r) {
    for (int i = 0; i < replicas_per_rank; ++i)
      g.replica_ids[r].push_back(r * replicas_per_rank + i);
  }
  TROUPE_RETURN_IF_ERROR(g.Validate());
  return g;
}

Result<std::string> MakeJobToken(MPI_Comm comm, std::chrono::milliseconds timeout) {
  // 32 hex digits, or all zeros when rank 0 could not draw them (every rank then fails
  // instead of waiting).
  char token[kJobTokenLength] = {};
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  Status drawn;
  if (rank == 0) {
    Result<std::string> fresh = NewJobToken();
    if (fresh.ok() && fresh->size() == sizeof(token)) {
      std::copy(fresh->begin(), fresh->end(), token);
    } else {
      drawn = fresh.ok() ? InternalError("job token of unexpected length") : fresh.status();
    }
  }
  MPI_Request req;
  int rc = MPI_Ibcast(token, sizeof(token), MPI_CHAR, 0, comm, &req);
  if (rc != MPI_SUCCESS) return UnavailableError("MPI_Ibcast of job token: " + MpiErrorString(rc));
  TROUPE_RETURN_IF_ERROR(WaitMpiRequest(&req, DeadlineAfter(timeout), "MakeJobToken"));
  TROUPE_RETURN_IF_ERROR(drawn);
  if (token[0] == '\0') return UnavailableError("rank 0 could not draw a job token");
  return std::string(token, sizeof(token));
}

}  // namespace troupe
