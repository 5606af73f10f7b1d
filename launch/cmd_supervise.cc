// `troupe supervise [--max-restarts N] -- COMMAND...`: restart a failing job (e.g. an mpirun or
// srun line running `troupe train`) with backoff; each restart resumes from its checkpoint.
#include <signal.h>

#include <cstdio>
#include <string>

#include "launch/command.h"
#include "launch/flags.h"
#include "launch/supervisor.h"

namespace troupe::launch {
namespace {

int RunSupervise(int argc, char** argv) {
  FlagParser parser("troupe supervise");
  parser.AddFlag("max-restarts", "N", "restarts allowed after failures", "3");
  parser.AddFlag("backoff", "SECONDS", "first backoff; doubles per restart", "1");
  parser.AddFlag("max-backoff", "SECONDS", "cap of the doubling backoff", "30");
  parser.AddFlag("start-timeout", "SECONDS",
                 "end a launcher none of whose processes joined the job this long after its "
                 "start (0: no limit)",
                 "120");
  parser.AddFlag("launcher-grace", "SECONDS",
                 "end a launcher still running this long after its job reported a stop", "1");
  parser.AddFlag("stop-signal", "SIGNAL",
                 "forward the first SIGTERM/SIGINT as this signal: TERM, INT or USR2 (USR2 for "
                 "mpirun, which passes it to every rank at once)",
                 "");
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage("troupe supervise [flags] -- COMMAND [ARGS...]").c_str());
    std::printf(
        "\nRuns COMMAND; when it fails, restarts it with exponential backoff until the\n"
        "restart budget is spent. SIGTERM/SIGINT are forwarded to COMMAND's process group and\n"
        "end supervision. A launcher that outlives its stopped job (--launcher-grace) or whose\n"
        "job never starts (--start-timeout) is ended (TERM, then KILL) and counts as a failure.\n"
        "Exit codes: 0 clean end, 2 configuration error (no restart),\n"
        "3 still failing after N restarts, 75 stopped by a signal after the job wrote its\n"
        "checkpoint (rank 0 wrote its stop line to TROUPE_JOB_STOP_FILE, or the command exited\n"
        "75; the same command resumes), 128+N stopped by signal N before that.\n"
        "Example: troupe supervise --max-restarts 5 --stop-signal USR2 -- \\\n"
        "           mpirun -np 4 -x TROUPE_JOB_STOP_FILE build/troupe train cfg.toml\n");
    return kExitOk;
  }
  SupervisorOptions options;
  Result<int64_t> restarts = s.ok() ? parser.GetInt("max-restarts") : Result<int64_t>(s);
  Result<double> backoff =
      restarts.ok() ? parser.GetDouble("backoff") : Result<double>(restarts.status());
  Result<double> max_backoff =
      backoff.ok() ? parser.GetDouble("max-backoff") : Result<double>(backoff.status());
  Result<double> start_timeout =
      max_backoff.ok() ? parser.GetDouble("start-timeout") : Result<double>(max_backoff.status());
  Result<double> grace = start_timeout.ok() ? parser.GetDouble("launcher-grace")
                                            : Result<double>(start_timeout.status());
  if (grace.ok() && (*start_timeout < 0 || *grace < 0)) {
    grace =
        InvalidArgumentError("troupe supervise: --start-timeout and --launcher-grace must be >= 0");
  }
  if (!grace.ok()) max_backoff = grace.status();
  if (max_backoff.ok() && (*backoff < 0 || *max_backoff < *backoff)) {
    max_backoff = InvalidArgumentError(
        "troupe supervise: need 0 <= --backoff <= --max-backoff, got --backoff " +
        std::to_string(*backoff) + " and --max-backoff " + std::to_string(*max_backoff));
  }
  const std::string stop_signal = max_backoff.ok() ? parser.Get("stop-signal") : "";
  if (stop_signal == "TERM" || stop_signal == "SIGTERM") {
    options.stop_signal = SIGTERM;
  } else if (stop_signal == "INT" || stop_signal == "SIGINT") {
    options.stop_signal = SIGINT;
  } else if (stop_signal == "USR2" || stop_signal == "SIGUSR2") {
    options.stop_signal = SIGUSR2;
  } else if (!stop_signal.empty()) {
    max_backoff = InvalidArgumentError(
        "troupe supervise: --stop-signal must be TERM, INT or "
        "USR2, got '" +
        stop_signal + "'");
  }
  if (!max_backoff.ok()) {
    std::fprintf(stderr, "%s\n", max_backoff.status().message().c_str());
    return kExitUsage;
  }
  options.max_restarts = static_cast<int>(*restarts);
  options.initial_backoff_s = *backoff;
  options.max_backoff_s = *max_backoff;
  options.start_timeout_s = *start_timeout;
  options.launcher_grace_s = *grace;
  Result<SupervisorResult> r = Supervise(parser.positional(), options);
  if (!r.ok()) {
    std::fprintf(stderr, "troupe supervise: %s\n", r.status().message().c_str());
    return kExitUsage;
  }
  std::fprintf(stderr, "troupe supervise: %s\n", r->summary.c_str());
  return r->exit_code;
}

}  // namespace
TROUPE_REGISTER_COMMAND("supervise", "restart a failing job with backoff until N restarts",
                        RunSupervise);
}  // namespace troupe::launch
