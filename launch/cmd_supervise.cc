// `troupe supervise [--max-restarts N] -- COMMAND...`: restart a failing job (e.g. an mpirun or
// srun line running `troupe train`) with backoff; each restart resumes from its checkpoint.
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
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage("troupe supervise [flags] -- COMMAND [ARGS...]").c_str());
    std::printf(
        "\nRuns COMMAND; when it fails, restarts it with exponential backoff until the\n"
        "restart budget is spent. SIGTERM/SIGINT are forwarded to COMMAND's process group and\n"
        "end supervision. Exit codes: 0 clean end, 2 configuration error (no restart),\n"
        "3 still failing after N restarts, 128+N stopped by signal N.\n"
        "Example: troupe supervise --max-restarts 5 -- mpirun -np 4 build/troupe train cfg.toml\n");
    return kExitOk;
  }
  SupervisorOptions options;
  Result<int64_t> restarts = s.ok() ? parser.GetInt("max-restarts") : Result<int64_t>(s);
  Result<double> backoff =
      restarts.ok() ? parser.GetDouble("backoff") : Result<double>(restarts.status());
  Result<double> max_backoff =
      backoff.ok() ? parser.GetDouble("max-backoff") : Result<double>(backoff.status());
  if (max_backoff.ok() && (*backoff < 0 || *max_backoff < *backoff)) {
    max_backoff = InvalidArgumentError(
        "troupe supervise: need 0 <= --backoff <= --max-backoff, got --backoff " +
        std::to_string(*backoff) + " and --max-backoff " + std::to_string(*max_backoff));
  }
  if (!max_backoff.ok()) {
    std::fprintf(stderr, "%s\n", max_backoff.status().message().c_str());
    return kExitUsage;
  }
  options.max_restarts = static_cast<int>(*restarts);
  options.initial_backoff_s = *backoff;
  options.max_backoff_s = *max_backoff;
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
