// Supervisor: runs a command, and when it fails restarts it with exponential backoff until a
// restart budget is spent. Each restart of `troupe train` resumes from the latest durable
// checkpoint, so the supervisor needs no state of its own. SIGTERM/SIGINT are forwarded to
// the child's process group and end supervision (a preempted job is not restarted).
//
// Each attempt runs with TROUPE_JOB_START_FILE and TROUPE_JOB_END_FILE naming fresh files
// (actors/control_plane.h): every process writes a line to the first once it joined the job,
// and one whose job stopped on a failure writes why to the second. The launcher is taken to
// be stuck (mpirun waiting for a host it cannot reach, as long as a partition lasts) when it
// still runs `launcher_grace_s` after the first stop line, or when no process joined within
// `start_timeout_s` (0: no limit) of its start: its process group gets SIGTERM, then SIGKILL
// `kill_after_s` later, and the attempt counts as failed.
//
// Exit codes: 0 the command ended cleanly; 2 the command reported a usage/config error (not
// worth retrying); 3 it still failed after the last allowed restart; 128+N when stopped by
// signal N.
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
