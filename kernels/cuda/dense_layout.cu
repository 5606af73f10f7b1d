#include "core/cuda_util.h"
#include "kernels/cuda/dense_layout.h"
#include "kernels/cuda/dense_util.h"

namespace troupe::gpu_dense {
namespace {

struct PermuteGeo {
  int64_t out_dims[4];
  int64_t in_strides[4];  // stride in `in` of output axis j
};

template <typename T>
__global__ void PermuteKernel(const T* __restrict__ in, PermuteGeo g, int64_t total,
                              T* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = i, src = 0;
    for (int j = 3; j >= 0; --j) {
      const int64_t coord = rest % g.out_dims[j];
      rest /= g.out_dims[j];
      src += coord * g.in_strides[j];
    }
    out[i] = in[src];
  }
}

template <typename T>
__global__ void CopyWindowKernel(const T* __restrict__ in, int64_t hi, int64_t wi, int64_t c,
                                 int64_t ho, int64_t wo, int64_t total, T* __restrict__ out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = i % c;
    int64_t rest = i / c;
    const int64_t x = rest % wo;
    rest /= wo;
    const int64_t y = rest % ho;
    const int64_t n = rest / ho;
    out[i] = (y < hi && x < wi) ? in[((n * hi + y) * wi + x) * c + ch] : T(0);
  }
}

}  // namespace

template <typename T>
Status Permute4D(int device, std::string_view op, const T* in, std::array<int64_t, 4> in_dims,
                 std::array<int, 4> perm, T* out, cudaStream_t stream) {
  int64_t in_strides[4];
  in_strides[3] = 1;
  for (int j = 2; j >= 0; --j) in_strides[j] = in_strides[j + 1] * in_dims[j + 1];
  PermuteGeo g;
  int64_t total = 1;
  for (int j = 0; j < 4; ++j) {
    g.out_dims[j] = in_dims[perm[j]];
    g.in_strides[j] = in_strides[perm[j]];
    total *= g.out_dims[j];
  }
  if (total == 0) return Status::OK();
  PermuteKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(in, g, total, out);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return gpu::CudaError(device, std::string(op) + ": permute", err);
  return Status::OK();
}

template <typename T>
Status CopyWindowNHWC(int device, std::string_view op, const T* in, int64_t n, int64_t hi,
                      int64_t wi, int64_t c, T* out, int64_t ho, int64_t wo, cudaStream_t stream) {
  const int64_t total = n * ho * wo * c;
  if (total == 0) return Status::OK();
  CopyWindowKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(in, hi, wi, c, ho, wo, total, out);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return gpu::CudaError(device, std::string(op) + ": pad/crop", err);
  return Status::OK();
}

#define TROUPE_INSTANTIATE(T)                                                                   \
  template Status Permute4D<T>(int, std::string_view, const T*, std::array<int64_t, 4>,         \
                               std::array<int, 4>, T*, cudaStream_t);                           \
  template Status CopyWindowNHWC<T>(int, std::string_view, const T*, int64_t, int64_t, int64_t, \
                                    int64_t, T*, int64_t, int64_t, cudaStream_t);
TROUPE_INSTANTIATE(float)
TROUPE_INSTANTIATE(double)
#undef TROUPE_INSTANTIATE

}  // namespace troupe::gpu_dense
