// Version and build facts for `troupe --version` / `--help` / `troupe env`.
#pragma once

#include <string>

namespace troupe::launch {

std::string VersionString();
// Multi-line: build type, compiler, flags, sanitizer, and which backends were compiled in
// (CUDA, NCCL, MPI) with the reason when one is missing.
std::string BuildReport();

}  // namespace troupe::launch
