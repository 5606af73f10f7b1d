// What `troupe train` prints and leaves behind when it ends, so that a launched job's merged
// log (mpirun and srun interleave every rank's stdout and stderr) says each thing once, by the
// rank it concerns, and a launcher script can tell a stop from a failure.
//
// Errors (stderr). A process started alone prints a configuration error as its message and a
// run error as "troupe train (rank 0 on HOST): MESSAGE". Under a launcher (world size > 1)
// every line is "[rank R] error: MESSAGE" (a run error adds " (on HOST)"), and:
//  - a configuration error (the config, flags or launch environment; exit 2) is one every rank
//    finds alike, so rank 0 prints it at once while another rank holds its copy back for
//    kConfigErrorHoldBackS with the default SIGTERM/SIGINT actions restored: rank 0's exit makes
//    mpirun (and srun --kill-on-bad-exit) end the others first. A rank that alone finds one (a
//    file missing on its host) still prints it once the hold-back is over;
//  - a run error is printed by the rank that found it; one the trainer decides on values every
//    rank shares (a loss, gradient or variable that is not finite: "step N: the loss is not
//    finite ...") by rank 0 only. A rank whose error only relays the
//    job's stop ordered because of another rank's failure (the coordinator names that rank and
//    its message, which that rank printed itself) prints nothing; rank 0 then prints one line
//    saying which rank stopped the job, without its message.
//
// `troupe train` prints a run error and the end-of-run line from ProcessLaunch::on_end, while
// the job's processes are still up: a rank waiting in MPI_Finalize is killed by mpirun once
// another rank exited, before it could print.
//
// Stops. SIGTERM, SIGINT and SIGUSR2 make every rank stop at the same step and write a
// checkpoint; rank 0 prints "stopped at step N ...; run the same command to resume (exit
// code 75)" and, when TROUPE_JOB_STOP_FILE names a file, appends that line to it
// ("<host> rank 0 pid P: stopped at step N ...", actors/control_plane.h's WriteJobNotice).
// mpirun exits 1, not 75, once it was signalled itself (Open MPI 4.1 sends its ranks SIGCONT,
// SIGTERM 1 s later and SIGKILL 1 s after that, and reports its own code), so launchers that
// signal it (launch/mpirun/train.sh, troupe supervise, launch/slurm/train.sbatch) read the
// file and report a stop (exit 75). SIGUSR2 sent to mpirun is forwarded to every rank at once
// and leaves mpirun waiting: the ranks stop on their own time and mpirun passes their 75 on.
#pragma once

#include <string>

#include "core/status.h"

namespace troupe::launch {

inline constexpr char kJobStopFileEnv[] = "TROUPE_JOB_STOP_FILE";
inline constexpr double kConfigErrorHoldBackS = 3.0;

// Who is reporting: this process's rank, the job's process count and host name.
struct RankIdentity {
  int rank = 0;
  int world_size = 1;
  std::string hostname;
};

// The launch environment's rank and world size (launch/environment.h without flags), or a
// single process when it cannot be read.
RankIdentity IdentityFromEnvironment();

// A configuration error (exit 2), printed per the rules above; may sleep (ranks > 0).
void PrintConfigError(const RankIdentity& who, const Status& error);

// A run error (exit 1 or 2), printed per the rules above; under a launcher, FailedPrecondition
// and Unimplemented (the set-up refused the config) are configuration errors.
void PrintRunError(const RankIdentity& who, const Status& error);

// Whether `error` is one every rank finds at the same step (FoundAlikeByEveryRank: the trainer's
// non-finite checks, InvalidArgument "step N: the loss is not finite", "step N: the gradients
// are not finite", "step N: variable 'V' holds ...").
bool FoundAlikeByEveryRank(const Status& error);

// Whether `error` only relays a stop the coordinator ordered because another rank failed
// ("worker HOST rank R (pid P) failed: ..."), naming a rank other than `rank`.
bool RelaysOtherRanksFailure(const Status& error, int rank);

// Rank 0's stop line, appended to the file TROUPE_JOB_STOP_FILE names (nothing when unset).
void RecordStop(int rank, const std::string& line);

}  // namespace troupe::launch
