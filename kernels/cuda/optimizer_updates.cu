#include "kernels/cuda/optimizer_updates.h"

#include <cuda_runtime.h>

#include "core/cuda_util.h"

namespace troupe::gpu_kernels {
namespace {

constexpr int kThreads = 256;

// The _rn intrinsics keep every multiply and add separately rounded, like the CPU build.
__global__ void AdamKernel(float* w, float* m, float* v, const float* g, int64_t n, float alpha,
                           float one_minus_b1, float one_minus_b2, float eps) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = __fadd_rn(m[i], __fmul_rn(__fsub_rn(gi, m[i]), one_minus_b1));
    const float vi = __fadd_rn(v[i], __fmul_rn(__fsub_rn(__fmul_rn(gi, gi), v[i]), one_minus_b2));
    m[i] = mi;
    v[i] = vi;
    w[i] = __fsub_rn(w[i], __fdiv_rn(__fmul_rn(mi, alpha), __fadd_rn(__fsqrt_rn(vi), eps)));
  }
}

__global__ void SgdKernel(float* w, float* m, const float* g, int64_t n, float lr, float mu,
                          bool nesterov) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float step = __fmul_rn(g[i], lr);
    if (m == nullptr) {
      w[i] = __fsub_rn(w[i], step);
      continue;
    }
    const float mi = __fsub_rn(__fmul_rn(m[i], mu), step);
    m[i] = mi;
    w[i] = nesterov ? __fadd_rn(w[i], __fsub_rn(__fmul_rn(mi, mu), step)) : __fadd_rn(w[i], mi);
  }
}

int Blocks(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

Status KerasAdamUpdate(Device device, float* w, float* m, float* v, const float* g, int64_t n,
                       float alpha, float one_minus_b1, float one_minus_b2, float eps) {
  if (n == 0) return Status::OK();
  cudaStream_t stream = gpu::CudaStream(device.index);
  AdamKernel<<<Blocks(n), kThreads, 0, stream>>>(w, m, v, g, n, alpha, one_minus_b1, one_minus_b2,
                                                 eps);
  TROUPE_CUDA_RETURN_IF_ERROR(device.index, "KerasAdamUpdate", cudaGetLastError());
  return Status::OK();
}

Status KerasSgdUpdate(Device device, float* w, float* m, const float* g, int64_t n, float lr,
                      float mu, bool nesterov) {
  if (n == 0) return Status::OK();
  cudaStream_t stream = gpu::CudaStream(device.index);
  SgdKernel<<<Blocks(n), kThreads, 0, stream>>>(w, m, g, n, lr, mu, nesterov);
  TROUPE_CUDA_RETURN_IF_ERROR(device.index, "KerasSGDUpdate", cudaGetLastError());
  return Status::OK();
}

}  // namespace troupe::gpu_kernels
