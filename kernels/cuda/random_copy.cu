// The random ops' host-to-device copy (declared in random_launch.h).
#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/random_launch.h"

namespace troupe::random::gpu::detail {

Status CopyToDevice(int device, void* stream, void* dst, const void* src, size_t bytes,
                    const char* op) {
  // Pageable source: cudaMemcpyAsync returns once the data is staged, so `src` may be freed.
  const cudaError_t err =
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) {
    return InternalError(std::string(op) +
                         ": host-to-device copy failed: " + cudaGetErrorString(err));
  }
  return Status::OK();
}

}  // namespace troupe::random::gpu::detail
