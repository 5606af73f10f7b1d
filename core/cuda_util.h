// For CUDA translation units only (.cu and CUDA host code): the raw stream of a device and
// error-to-Status macros. Not included by code that must build without CUDA.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "core/gpu.h"
#include "core/status.h"

namespace troupe::gpu {

inline cudaStream_t CudaStream(int index) { return static_cast<cudaStream_t>(Stream(index)); }

// The errors a faulting kernel leaves behind. They are sticky: every later CUDA call of the
// process fails with the same error, and only a new process can use the device again.
inline bool IsStickyCudaError(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContained:
      return true;
    default:
      return false;
  }
}

// "gpu:0: <what>: <cuda error string>". A sticky error may surface in any later CUDA call (a
// copy, an allocation, another kernel's launch), so it also says what happened and what to do:
// re-run with TROUPE_GPU_SYNC=1 to name the op that faulted, and restart the process.
inline Status CudaError(int device, std::string_view what, cudaError_t err) {
  const std::string gpu = "gpu:" + std::to_string(device);
  std::string msg = gpu + ": " + std::string(what) + ": " + cudaGetErrorString(err);
  if (IsStickyCudaError(err)) {
    const char* sync = std::getenv("TROUPE_GPU_SYNC");
    msg += std::string(" (") + cudaGetErrorName(err) + "): a GPU kernel faulted. ";
    if (sync != nullptr && std::string_view(sync) == "1") {
      msg +=
          "TROUPE_GPU_SYNC=1 checks every graph kernel as it runs, so a graph op named here "
          "is the one that faulted. ";
    } else {
      msg +=
          "Kernels run asynchronously, so the op that faulted may have run before the call "
          "named here: re-run with TROUPE_GPU_SYNC=1 to check every kernel as it runs and "
          "name the op. ";
    }
    msg += "The CUDA context of " + gpu +
           " is now unusable: the process must restart (training resumes from the latest "
           "checkpoint)";
  }
  return InternalError(std::move(msg));
}

}  // namespace troupe::gpu

#define TROUPE_CUDA_RETURN_IF_ERROR(device, what, expr)                    \
  do {                                                                     \
    cudaError_t troupe_cuda_err_ = (expr);                                 \
    if (troupe_cuda_err_ != cudaSuccess) {                                 \
      return ::troupe::gpu::CudaError((device), (what), troupe_cuda_err_); \
    }                                                                      \
  } while (0)
