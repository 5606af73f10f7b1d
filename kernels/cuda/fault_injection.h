// How GPU kernel faults reach the user, and a test-only way to cause one.
//
// InstallGpuFaultHandling(registry) runs once RegisterGpuKernels has registered every GPU kernel:
//  - A GPU kernel that fails while its device holds a sticky fault (an earlier kernel wrote
//    through a bad pointer, ...) reports that fault with gpu::CudaError's advice (the device,
//    the CUDA error, TROUPE_GPU_SYNC=1, restart) rather than only, say, cuDNN's
//    CUDNN_STATUS_EXECUTION_FAILED_CUDART: kernels run asynchronously, so a fault usually
//    surfaces in whichever CUDA call comes next.
//  - TROUPE_GPU_INJECT_FAULT=<OpName>:<N> (tests only; read once) makes the N-th call (counted
//    from 1, per process) of <OpName>'s GPU kernel run the real kernel and then queue, on the
//    device's stream, a kernel that writes through an invalid pointer: a genuine asynchronous
//    cudaErrorIllegalAddress that Troupe's own checks must catch. A malformed value is logged
//    as an error and ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace troupe {

class OpRegistry;

namespace gpu {

inline constexpr char kInjectFaultEnv[] = "TROUPE_GPU_INJECT_FAULT";

struct FaultSpec {
  std::string op;    // whose GPU kernel faults
  int64_t call = 0;  // on its call number `call`, from 1
};
// "<OpName>:<N>" with N >= 1; InvalidArgument naming the variable and the expected form.
Result<FaultSpec> ParseFaultSpec(std::string_view value);

}  // namespace gpu

void InstallGpuFaultHandling(OpRegistry& registry);

}  // namespace troupe
