// GPU GatherV2 (axis 0) and UnsortedSegmentSum (its gradient), the CPU kernels of
// kernels/gather.cc on the GPU. Shapes and errors come from the ops' registered shape functions.
//
// GatherV2 copies whole params rows (any fixed-size dtype, in the widest word that divides the
// row and both buffers' alignment): bit-equal to the CPU. UnsortedSegmentSum sorts (id, position)
// pairs with a stable CUB radix sort, then one thread per output element adds its segment's rows
// in increasing input order from zero, the CPU kernel's order: bit-equal to the CPU and run to
// run, with no float atomics.
//
// Ids out of range: the CPU kernels return InvalidArgument naming the bad index; checking here
// would need a device->host copy and a sync, so, like TensorFlow's GPU kernels, GatherV2 writes
// zeros for an index outside [0, N) and UnsortedSegmentSum drops a row whose id is >= num_segments
// (negative ids are dropped on both devices).
#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <cstdint>
#include <string>

#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {
namespace {

// ---- GatherV2 -------------------------------------------------------------------------------

// out[i, j] = params[idx[i], j] over rows of `words` words; zeros for an index outside [0, rows).
template <typename Word, typename Index>
__global__ void GatherKernel(const Word* __restrict__ params, const Index* __restrict__ idx,
                             int64_t rows, int64_t words, int64_t total, Word* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t i = t / words, j = t - i * words;
    const int64_t r = static_cast<int64_t>(idx[i]);
    out[t] = (r >= 0 && r < rows) ? params[r * words + j] : Word{};
  }
}

// Widest of 16/8/4/2/1 bytes dividing the row and both addresses.
size_t WordBytes(size_t row_bytes, const void* a, const void* b) {
  const auto ua = reinterpret_cast<uintptr_t>(a), ub = reinterpret_cast<uintptr_t>(b);
  for (size_t w : {16, 8, 4, 2}) {
    if (row_bytes % w == 0 && ua % w == 0 && ub % w == 0) return w;
  }
  return 1;
}

template <typename Word>
void LaunchGather(KernelContext& ctx, const Tensor& params, const Tensor& indices, size_t row_bytes,
                  Tensor& y) {
  const int64_t words = static_cast<int64_t>(row_bytes / sizeof(Word));
  const int64_t total = indices.num_elements() * words;
  const auto* p = static_cast<const Word*>(params.raw_data());
  auto* out = static_cast<Word*>(y.raw_data());
  const int64_t rows = params.dim(0);
  if (indices.dtype() == DType::kInt32) {
    GatherKernel<<<GridFor(total), kThreads, 0, StreamOf(ctx)>>>(p, indices.data<int32_t>(), rows,
                                                                 words, total, out);
  } else {
    GatherKernel<<<GridFor(total), kThreads, 0, StreamOf(ctx)>>>(p, indices.data<int64_t>(), rows,
                                                                 words, total, out);
  }
}

Status GpuGather(const ShapeFn& shape_fn, KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
  const Tensor& params = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
  if (y.num_elements() == 0) return Status::OK();
  gpu::ScopedDevice scoped(ctx.device().index);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  // From the output: params may have no rows (every index out of range) and still a row size.
  const size_t row_bytes = y.byte_size() / static_cast<size_t>(indices.num_elements());
  switch (WordBytes(row_bytes, params.raw_data(), y.raw_data())) {
    case 16:
      LaunchGather<uint4>(ctx, params, indices, row_bytes, y);
      break;
    case 8:
      LaunchGather<uint64_t>(ctx, params, indices, row_bytes, y);
      break;
    case 4:
      LaunchGather<uint32_t>(ctx, params, indices, row_bytes, y);
      break;
    case 2:
      LaunchGather<uint16_t>(ctx, params, indices, row_bytes, y);
      break;
    default:
      LaunchGather<uint8_t>(ctx, params, indices, row_bytes, y);
  }
  return LaunchStatus(ctx);
}

// ---- UnsortedSegmentSum ---------------------------------------------------------------------

// Sort keys: the id, or `num` (past every segment) for an id outside [0, num); values: positions.
template <typename Index>
__global__ void SegmentKeysKernel(const Index* __restrict__ ids, int64_t n, int64_t num,
                                  uint32_t* __restrict__ keys, uint32_t* __restrict__ pos) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t id = static_cast<int64_t>(ids[i]);
    keys[i] = static_cast<uint32_t>(id >= 0 && id < num ? id : num);
    pos[i] = static_cast<uint32_t>(i);
  }
}

// start[s] = first k with keys[k] >= s, for s in [0, num].
__global__ void SegmentStartsKernel(const uint32_t* __restrict__ keys, int64_t n, int64_t num,
                                    int64_t* __restrict__ start) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; s <= num;
       s += step) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<int64_t>(keys[mid]) < s) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    start[s] = lo;
  }
}

// out[s, c] = 0 + data[pos[start[s]], c] + data[pos[start[s] + 1], c] + ... (the CPU's order).
template <typename T>
__global__ void SegmentSumKernel(const T* __restrict__ data, const uint32_t* __restrict__ pos,
                                 const int64_t* __restrict__ start, int64_t row, int64_t total,
                                 T* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t s = t / row, c = t - s * row;
    T acc = T(0);
    for (int64_t k = start[s]; k < start[s + 1]; ++k) {
      acc += data[static_cast<int64_t>(pos[k]) * row + c];
    }
    out[t] = acc;
  }
}

// Bits needed for keys in [0, num].
int KeyBits(int64_t num) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= num) ++bits;
  return bits;
}

// Positions of the rows sorted stably by segment (`pos`), and each segment's range (`start`).
Status SortBySegment(KernelContext& ctx, const Tensor& ids, int64_t num, Scratch& pos,
                     Scratch& start) {
  const int64_t n = ids.num_elements();
  const size_t bytes = static_cast<size_t>(n) * sizeof(uint32_t);
  Scratch keys_in, keys_out, pos_in, temp;
  TROUPE_RETURN_IF_ERROR(keys_in.Allocate(ctx, bytes));
  TROUPE_RETURN_IF_ERROR(keys_out.Allocate(ctx, bytes));
  TROUPE_RETURN_IF_ERROR(pos_in.Allocate(ctx, bytes));
  TROUPE_RETURN_IF_ERROR(pos.Allocate(ctx, bytes));
  TROUPE_RETURN_IF_ERROR(start.Allocate(ctx, static_cast<size_t>(num + 1) * sizeof(int64_t)));
  const cudaStream_t stream = StreamOf(ctx);
  if (ids.dtype() == DType::kInt32) {
    SegmentKeysKernel<<<GridFor(n), kThreads, 0, stream>>>(
        ids.data<int32_t>(), n, num, keys_in.as<uint32_t>(), pos_in.as<uint32_t>());
  } else {
    SegmentKeysKernel<<<GridFor(n), kThreads, 0, stream>>>(
        ids.data<int64_t>(), n, num, keys_in.as<uint32_t>(), pos_in.as<uint32_t>());
  }
  TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
  const int bits = KeyBits(num);
  size_t temp_bytes = 0;
  cudaError_t err = cub::DeviceRadixSort::SortPairs(
      nullptr, temp_bytes, keys_in.as<uint32_t>(), keys_out.as<uint32_t>(), pos_in.as<uint32_t>(),
      pos.as<uint32_t>(), static_cast<int>(n), 0, bits, stream);
  if (err == cudaSuccess) {
    TROUPE_RETURN_IF_ERROR(temp.Allocate(ctx, temp_bytes));
    err = cub::DeviceRadixSort::SortPairs(temp.as<void>(), temp_bytes, keys_in.as<uint32_t>(),
                                          keys_out.as<uint32_t>(), pos_in.as<uint32_t>(),
                                          pos.as<uint32_t>(), static_cast<int>(n), 0, bits, stream);
  }
  if (err != cudaSuccess) {
    return gpu::CudaError(ctx.device().index, std::string(ctx.op_name()) + ": radix sort", err);
  }
  SegmentStartsKernel<<<GridFor(num + 1), kThreads, 0, stream>>>(keys_out.as<uint32_t>(), n, num,
                                                                 start.as<int64_t>());
  return LaunchStatus(ctx);
}

Status GpuSegmentSum(const ShapeFn& shape_fn, KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
  const Tensor& data = ctx.input(0);
  const Tensor& ids = ctx.input(1);
  TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
  if (y.num_elements() == 0) return Status::OK();
  gpu::ScopedDevice scoped(ctx.device().index);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const int64_t n = ids.num_elements(), num = y.dim(0);
  if (n == 0 || data.num_elements() == 0) {  // no rows, or rows of zero width: all zeros
    TROUPE_CUDA_RETURN_IF_ERROR(ctx.device().index, std::string(ctx.op_name()) + ": zero fill",
                                cudaMemsetAsync(y.raw_data(), 0, y.byte_size(), StreamOf(ctx)));
    return Status::OK();
  }
  if (n > INT_MAX || num >= UINT32_MAX) {
    return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) + ": " +
                              std::to_string(n) + " segment ids into " + std::to_string(num) +
                              " segments exceed the GPU kernel's 32-bit sort keys");
  }
  const int64_t row = data.num_elements() / n;
  Scratch pos, start;
  TROUPE_RETURN_IF_ERROR(SortBySegment(ctx, ids, num, pos, start));
  const int64_t total = y.num_elements();
  Status status;
  kernels::DispatchReal(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    SegmentSumKernel<T><<<GridFor(total), kThreads, 0, StreamOf(ctx)>>>(
        data.data<T>(), pos.as<uint32_t>(), start.as<int64_t>(), row, total, y.data<T>());
    status = LaunchStatus(ctx);
  });
  return status;
}

}  // namespace
}  // namespace gpu_ew

void RegisterGpuGatherKernels(OpRegistry& r) {
  using gpu_ew::ShapeFnOf;
  ShapeFn gather = ShapeFnOf(r, "GatherV2");
  gpu_ew::RegisterGpu(r, "GatherV2", [gather](KernelContext& ctx) -> Status {
    return gpu_ew::GpuGather(gather, ctx);
  });
  ShapeFn segment_sum = ShapeFnOf(r, "UnsortedSegmentSum");
  gpu_ew::RegisterGpu(r, "UnsortedSegmentSum", [segment_sum](KernelContext& ctx) -> Status {
    return gpu_ew::GpuSegmentSum(segment_sum, ctx);
  });
}

}  // namespace troupe
