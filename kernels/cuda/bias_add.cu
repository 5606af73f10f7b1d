// GPU BiasAdd (value [..., C] + bias [C]) and BiasAddGrad (sum of out_backprop over every dim but
// the last), float32/float64/int32/int64, NHWC only like the CPU kernels.
//
// BiasAddGrad is deterministic without atomics: the rows are cut into chunks whose size depends
// only on the shape; a block sums one chunk for 32 channels (each thread a fixed strided run of
// rows, then a fixed shared-memory tree), and a second kernel adds the chunk partials of each
// channel in chunk order.
#include <algorithm>

#include "core/cuda_util.h"
#include "kernels/cuda/dense_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"

namespace troupe {
namespace {

using gpu_dense::BlocksFor;
using gpu_dense::kThreads;

constexpr int kCols = 32;  // channels per block
constexpr int kLanes = 8;  // row lanes per block
constexpr int64_t kMinChunkRows = 256;
constexpr int64_t kMaxChunks = 1024;

template <typename T>
__global__ void BiasAddKernel(const T* __restrict__ x, const T* __restrict__ b, int64_t c,
                              int64_t total, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = x[i] + b[i % c];
  }
}

// out[chunk * c + col] = sum of x[r, col] over the rows r of `chunk`.
template <typename T>
__global__ void ChunkSumKernel(const T* __restrict__ x, int64_t rows, int64_t c, int64_t chunk_rows,
                               T* __restrict__ out) {
  __shared__ T partial[kLanes][kCols];
  const int64_t col = blockIdx.x * int64_t{kCols} + threadIdx.x;
  const int64_t r0 = blockIdx.y * chunk_rows;
  const int64_t r1 = min(rows, r0 + chunk_rows);
  T acc = T(0);
  if (col < c) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kLanes) acc += x[r * c + col];
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  for (int s = kLanes / 2; s > 0; s /= 2) {
    if (threadIdx.y < s) partial[threadIdx.y][threadIdx.x] += partial[threadIdx.y + s][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && col < c) out[blockIdx.y * c + col] = partial[0][threadIdx.x];
}

// out[col] = sum over chunks (in order) of partial[chunk * c + col].
template <typename T>
__global__ void SumChunksKernel(const T* __restrict__ partial, int64_t chunks, int64_t c,
                                T* __restrict__ out) {
  for (int64_t col = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; col < c;
       col += int64_t{gridDim.x} * blockDim.x) {
    T acc = partial[col];
    for (int64_t k = 1; k < chunks; ++k) acc += partial[k * c + col];
    out[col] = acc;
  }
}

template <typename Fn>
Status Dispatch(DType dtype, Fn&& fn) {
  Status s = Status::OK();
  if (!kernels::DispatchReal(dtype, [&](auto tag) { s = fn(tag); })) {
    return InvalidArgumentError("unsupported dtype " + std::string(DTypeName(dtype)));
  }
  return s;
}

Status GpuBiasAdd(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  const Tensor& x = ctx.input(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t total = y.num_elements(), c = x.dim(x.rank() - 1);
  if (total == 0) return Status::OK();
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  return Dispatch(y.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    BiasAddKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(x.data<T>(), ctx.input(1).data<T>(),
                                                                c, total, y.data<T>());
    return gpu::LaunchStatus(device, op);
  });
}

Status GpuBiasAddGrad(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  const Tensor& g = ctx.input(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor db, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t c = db.num_elements();
  if (c == 0) return Status::OK();
  const int64_t rows = g.num_elements() / c;
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  if (rows == 0) {
    TROUPE_CUDA_RETURN_IF_ERROR(device, op + ": zero fill",
                                cudaMemsetAsync(db.raw_data(), 0, db.byte_size(), stream));
    return Status::OK();
  }
  // Chunking depends only on the shape (bitwise reproducible).
  const int64_t chunk_rows = std::max(kMinChunkRows, (rows + kMaxChunks - 1) / kMaxChunks);
  const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  const int64_t col_blocks = (c + kCols - 1) / kCols;
  if (col_blocks > INT32_MAX) {
    return UnimplementedError(gpu_dense::Where(device, op) + std::to_string(c) +
                              " channels are too many");
  }
  return Dispatch(db.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    gpu::DeviceScratch partial;
    T* chunk_out = db.data<T>();
    if (chunks > 1) {
      TROUPE_ASSIGN_OR_RETURN(
          partial,
          gpu::DeviceScratch::Allocate(device, static_cast<size_t>(chunks * c) * sizeof(T), op));
      chunk_out = partial.as<T>();
    }
    const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
    ChunkSumKernel<T>
        <<<grid, dim3(kCols, kLanes), 0, stream>>>(g.data<T>(), rows, c, chunk_rows, chunk_out);
    if (chunks > 1) {
      SumChunksKernel<T>
          <<<BlocksFor(c), kThreads, 0, stream>>>(partial.as<T>(), chunks, c, db.data<T>());
    }
    return gpu::LaunchStatus(device, op);
  });
}

}  // namespace

void RegisterGpuBiasKernels(OpRegistry& registry) {
  gpu_dense::RegisterOrDie(registry, "BiasAdd", GpuBiasAdd);
  gpu_dense::RegisterOrDie(registry, "BiasAddGrad", GpuBiasAddGrad);
}

}  // namespace troupe
