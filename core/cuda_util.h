// For CUDA translation units only (.cu and CUDA host code): the raw stream of a device and
// error-to-Status macros. Not included by code that must build without CUDA.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/gpu.h"
#include "core/status.h"

namespace troupe::gpu {

inline cudaStream_t CudaStream(int index) { return static_cast<cudaStream_t>(Stream(index)); }

// "gpu:0: <what>: <cuda error string>"
inline Status CudaError(int device, std::string_view what, cudaError_t err) {
  return InternalError("gpu:" + std::to_string(device) + ": " + std::string(what) + ": " +
                       cudaGetErrorString(err));
}

}  // namespace troupe::gpu

#define TROUPE_CUDA_RETURN_IF_ERROR(device, what, expr)                    \
  do {                                                                     \
    cudaError_t troupe_cuda_err_ = (expr);                                 \
    if (troupe_cuda_err_ != cudaSuccess) {                                 \
      return ::troupe::gpu::CudaError((device), (what), troupe_cuda_err_); \
    }                                                                      \
  } while (0)
