// `troupe env`: prints what the launcher detected and why.
#include <cstdio>

#include "launch/build_report.h"
#include "launch/command.h"
#include "launch/environment.h"
#include "launch/flags.h"
#include "launch/launch_flags.h"

namespace troupe::launch {
namespace {

int RunEnv(int argc, char** argv) {
  FlagParser parser("troupe env");
  AddLaunchFlags(parser);
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage("troupe env [flags]").c_str());
    std::printf(
        "\nPrints rank, world size, local rank, coordinator and the reasons, with the\n"
        "precedence flags > MPI/PMIx > Slurm > single process.\n");
    return kExitOk;
  }
  Result<LaunchFlags> flags = s.ok() ? ReadLaunchFlags(parser) : Result<LaunchFlags>(s);
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", flags.status().message().c_str());
    return kExitUsage;
  }
  Result<LaunchEnvironment> env = DetectEnvironment(*flags);
  if (!env.ok()) {
    std::fprintf(stderr, "troupe env: %s\n", env.status().message().c_str());
    return kExitUsage;
  }
  std::printf(
      "launcher:    %s\nhost:        %s\nrank:        %d of %d\nlocal rank:  %d of %d\n"
      "coordinator: %s\n",
      env->launcher.c_str(), env->hostname.c_str(), env->rank, env->world_size, env->local_rank,
      env->local_size,
      env->coordinator.empty() ? "(in process / via MPI)" : env->coordinator.c_str());
  for (const auto& r : env->reasons) std::printf("  because:   %s\n", r.c_str());
  std::printf("%s", BuildReport().c_str());
  return kExitOk;
}

}  // namespace
TROUPE_REGISTER_COMMAND("env", "print the detected launch environment (rank, world, coordinator)",
                        RunEnv);
}  // namespace troupe::launch
