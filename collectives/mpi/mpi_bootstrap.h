// MPI start-up helpers for programs that run under mpirun or `srun --mpi=pmix`: initialise MPI
// with MPI_THREAD_MULTIPLE and error returns, build a ProcessGroup from MPI's view of ranks and
// hosts, and agree on a job-unique token (for shared-memory segment names). The launcher may
// fill a ProcessGroup itself instead; the communicators only need the struct.
#pragma once

#include <mpi.h>

#include <string>

#include "collectives/process_group.h"
#include "collectives/work.h"
#include "core/result.h"

namespace troupe {

// MPI_Init_thread(MPI_THREAD_MULTIPLE) unless MPI is already initialised; fails when the
// library cannot provide MPI_THREAD_MULTIPLE. Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD, so
// MPI errors come back as codes instead of aborting the job.
Status InitMpi(int* argc, char*** argv);
// MPI_Finalize when initialised and not yet finalised.
void FinalizeMpi();

// Polls a non-blocking MPI request until it completes; DeadlineExceeded naming `what` when it
// has not by `deadline` (a peer that never arrives cannot hang start-up).
Status WaitMpiRequest(MPI_Request* request, Deadline deadline, const std::string& what);

// World rank/size from `comm`; hosts from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), numbered
// by their lowest rank; replicas_per_rank consecutive replica ids per rank (rank-major).
// ranks_per_fake_host > 0 pretends every block of that many ranks is its own host (tests and
// benchmarks of the hierarchical path on one machine). Collective over `comm`; fails instead
// of hanging when a rank does not join within `timeout`.
Result<ProcessGroup> ProcessGroupFromMpi(
    MPI_Comm comm, int replicas_per_rank, int ranks_per_fake_host = 0,
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

// NewJobToken drawn by rank 0 and broadcast: "/troupe-<token>" names are then unique to
// this job. Collective over `comm`; every rank fails when rank 0 could not draw one.
Result<std::string> MakeJobToken(MPI_Comm comm,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60));

// "MPI_ERR_TRUNCATE: message truncated" for an MPI error code.
std::string MpiErrorString(int code);

}  // namespace troupe
