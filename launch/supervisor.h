// Supervisor: runs a command, and when it fails restarts it with exponential backoff until a
// restart budget is spent. Each restart of `troupe train` resumes from the latest durable
// checkpoint, so the supervisor needs no state of its own. SIGTERM/SIGINT are forwarded to
// the child's process group and end supervision (a preempted job is not restarted): the first
// one as `stop_signal` when set (SIGUSR2 for mpirun, which forwards it to every rank at once
// instead of killing them 1-2 s after a SIGTERM), any later one as it came.
//
// Each attempt runs with TROUPE_JOB_START_FILE, TROUPE_JOB_END_FILE and TROUPE_JOB_STOP_FILE
// naming fresh files (actors/control_plane.h, launch/rank_report.h): every process writes a
// line to the first once it joined the job, one whose job stopped on a failure writes why to
// the second, and rank 0 of a job stopped by a signal writes its "stopped at step N" line to
// the third. The launcher is taken to
// be stuck (mpirun waiting for a host it cannot reach, as long as a partition lasts) when it
// still runs `launcher_grace_s` after the first stop line, or when no process joined within
// `start_timeout_s` (0: no limit) of its start: its process group gets SIGTERM, then SIGKILL
// `kill_after_s` later, and the attempt counts as failed.
//
// Exit codes: 0 the command ended cleanly; 2 the command reported a usage/config error (not
// worth retrying); 3 it still failed after the last allowed restart; 75 stopped by a signal
// after the job wrote its checkpoint (the stop file has its line, or the command exited 75:
// mpirun signalled itself exits 1 whatever its ranks did); 128+N when stopped by signal N
// before that.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace troupe::launch {

inline constexpr int kExitGaveUp = 3;

struct SupervisorOptions {
  int max_restarts = 3;
  double initial_backoff_s = 1.0;
  double max_backoff_s = 30.0;
  double launcher_grace_s = 1.0;
  double kill_after_s = 1.0;
  double start_timeout_s = 120.0;
  // The signal the first SIGTERM/SIGINT is forwarded as (0: as it came).
  int stop_signal = 0;
  // Exit codes that mean "do not retry" (configuration errors).
  std::vector<int> fatal_exit_codes = {2};
};

struct SupervisorResult {
  int exit_code = 0;
  int restarts = 0;
  std::string summary;  // one line: what happened
};

// Runs argv[0] (searched in PATH) with argv; blocks until supervision ends.
Result<SupervisorResult> Supervise(const std::vector<std::string>& argv,
                                   const SupervisorOptions& options);

}  // namespace troupe::launch
