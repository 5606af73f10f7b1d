#include "launch/build_report.h"

#include <thread>

#include "troupe/build_info.h"

namespace troupe::launch {

std::string VersionString() { return TROUPE_VERSION_STRING; }

std::string BuildReport() {
  std::string out;
  out += "build:     " TROUPE_BUILD_TYPE ", " TROUPE_CXX_COMPILER "\n";
  out += "flags:     " TROUPE_CXX_FLAGS "\n";
  out += std::string("sanitizer: ") +
         (std::string(TROUPE_SANITIZER).empty() ? "none" : TROUPE_SANITIZER) + "\n";
  out +=
      "cpu:       " + std::to_string(std::thread::hardware_concurrency()) + " hardware threads\n";
  out += "backends:  cpu (Eigen)";
  out += TROUPE_HAVE_MPI ? ", mpi" : "";
  out += TROUPE_HAVE_CUDA ? ", cuda " TROUPE_CUDA_VERSION : "";
  out += TROUPE_HAVE_NCCL ? ", nccl" : "";
  out += "\n";
  if (!TROUPE_HAVE_MPI) out += "missing:   MPI (apt-get install libopenmpi-dev openmpi-bin)\n";
  if (!TROUPE_HAVE_CUDA) out += "missing:   CUDA (no toolkit at /usr/local/cuda)\n";
  if (TROUPE_HAVE_CUDA && !TROUPE_HAVE_NCCL) out += "missing:   NCCL (not under /usr/local/cuda)\n";
  return out;
}

}  // namespace troupe::launch
