// `troupe env`: prints what the launcher detected and why.
#include <cstdio>
#include <string>

#include "core/gpu.h"
#include "launch/build_report.h"
#include "launch/command.h"
#include "launch/environment.h"
#include "launch/flags.h"
#include "launch/launch_flags.h"

namespace troupe::launch {
namespace {

// "gpus:        1 visible" and one line per device, or why none is visible.
void PrintGpus() {
  if (!gpu::Built()) {
    std::printf("gpus:        built without CUDA\n");
    return;
  }
  const int count = gpu::DeviceCount();
  if (count == 0) {
    std::string reason = gpu::NoDeviceReason();
    std::printf("gpus:        no GPU visible (built with CUDA %s%s%s)\n",
                gpu::CudaVersion().c_str(), reason.empty() ? "" : "; ", reason.c_str());
    return;
  }
  std::printf("gpus:        %d visible (built with CUDA %s)\n", count, gpu::CudaVersion().c_str());
  Result<std::vector<gpu::DeviceInfo>> devices = gpu::ListDevices();
  if (!devices.ok()) {
    std::printf("  error:     %s\n", devices.status().message().c_str());
    return;
  }
  for (const gpu::DeviceInfo& d : *devices) {
    std::printf("  gpu:%-7d %s, %.1f GiB (%.1f GiB free), compute capability %d.%d, %d SMs\n",
                d.index, d.name.c_str(), static_cast<double>(d.total_memory) / (1 << 30),
                static_cast<double>(d.free_memory) / (1 << 30), d.compute_major, d.compute_minor,
                d.multiprocessors);
  }
}

int RunEnv(int argc, char** argv) {
  FlagParser parser("troupe env");
  AddLaunchFlags(parser);
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage("troupe env [flags]").c_str());
    std::printf(
        "\nPrints rank, world size, local rank, coordinator and the reasons, with the\n"
        "precedence flags > MPI/PMIx > Slurm > single process, then the GPUs this process\n"
        "sees (index, name, memory, compute capability; CUDA_VISIBLE_DEVICES applies).\n");
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
  PrintGpus();
  std::printf("%s", BuildReport().c_str());
  return kExitOk;
}

}  // namespace
TROUPE_REGISTER_COMMAND("env",
                        "print the detected launch environment (rank, world, coordinator) "
                        "and the visible GPUs",
                        RunEnv);
}  // namespace troupe::launch
