// GPU Softmax, LogSoftmax (last dim), SparseSoftmaxCrossEntropyWithLogits and
// SoftmaxCrossEntropyWithLogits. One warp per row: lane l takes columns l, l+32, ...; the row max
// and sum are combined by a fixed shuffle tree (deterministic, no atomics). Each row follows the
// CPU kernel's expression order (max-subtract, exp, sum, log; softmax multiplies by 1/sum,
// the losses divide by sum), but the sum's order and exp/log differ from Eigen's in the last
// bits: results match the CPU to ~1e-6 relative, not bit for bit.
//
// Labels outside [0, C) in the sparse loss: the CPU kernel returns InvalidArgument; checking
// here would need a device->host copy and a sync, so, like TensorFlow's GPU kernel, that row's
// loss and backprop are NaN instead.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;  // warps per block

template <typename T>
__device__ T Exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return expf(x);
  } else {
    return exp(x);
  }
}
template <typename T>
__device__ T Log(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return logf(x);
  } else {
    return log(x);
  }
}

template <typename T>
__device__ T WarpMax(T v) {
#pragma unroll
  for (int w = kWarp / 2; w > 0; w /= 2) {
    const T o = __shfl_xor_sync(0xffffffffu, v, w);
    v = v < o ? o : v;
  }
  return v;
}
// Butterfly: every lane ends with the same bits (a + b == b + a), in an order fixed by C only.
template <typename T>
__device__ T WarpSum(T v) {
#pragma unroll
  for (int w = kWarp / 2; w > 0; w /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, w);
  return v;
}

template <typename T>
__device__ T RowMax(const T* x, int64_t c, int lane) {
  T m = x[0];
  for (int64_t i = lane; i < c; i += kWarp) m = m < x[i] ? x[i] : m;
  return WarpMax(m);
}

__device__ inline int64_t RowOf(int* lane) {
  *lane = threadIdx.x % kWarp;
  return static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
}

template <typename T>
__global__ void SoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t c,
                              bool log) {
  int lane;
  const int64_t r = RowOf(&lane);
  if (r >= rows) return;  // whole warps leave together
  const T* in = x + r * c;
  T* out = y + r * c;
  const T m = RowMax(in, c, lane);
  T sum = 0;
  for (int64_t i = lane; i < c; i += kWarp) {
    const T e = Exp(in[i] - m);
    if (!log) out[i] = e;
    sum += e;
  }
  sum = WarpSum(sum);
  if (log) {
    const T lse = Log(sum);
    for (int64_t i = lane; i < c; i += kWarp) out[i] = (in[i] - m) - lse;
  } else {
    const T inv = T(1) / sum;  // the CPU multiplies by 1/sum
    for (int64_t i = lane; i < c; i += kWarp) out[i] = out[i] * inv;
  }
}

template <typename T, typename L>
__global__ void SparseXentKernel(const T* __restrict__ x, const L* __restrict__ labels,
                                 int64_t rows, int64_t c, T* __restrict__ loss,
                                 T* __restrict__ back) {
  int lane;
  const int64_t r = RowOf(&lane);
  if (r >= rows) return;
  const T* in = x + r * c;
  T* g = back + r * c;
  const int64_t label = static_cast<int64_t>(labels[r]);
  if (label < 0 || label >= c) {
    const T nan = T(NAN);
    for (int64_t i = lane; i < c; i += kWarp) g[i] = nan;
    if (lane == 0) loss[r] = nan;
    return;
  }
  const T m = RowMax(in, c, lane);
  T sum = 0;
  for (int64_t i = lane; i < c; i += kWarp) {
    const T e = Exp(in[i] - m);
    g[i] = e;
    sum += e;
  }
  sum = WarpSum(sum);
  if (lane == 0) loss[r] = Log(sum) - (in[label] - m);
  for (int64_t i = lane; i < c; i += kWarp) {
    const T p = g[i] / sum;
    g[i] = i == label ? p - T(1) : p;
  }
}

template <typename T>
__global__ void DenseXentKernel(const T* __restrict__ x, const T* __restrict__ labels, int64_t rows,
                                int64_t c, T* __restrict__ loss, T* __restrict__ back) {
  int lane;
  const int64_t r = RowOf(&lane);
  if (r >= rows) return;
  const T* in = x + r * c;
  const T* lab = labels + r * c;
  T* g = back + r * c;
  const T m = RowMax(in, c, lane);
  T sum = 0;
  for (int64_t i = lane; i < c; i += kWarp) {
    const T e = Exp(in[i] - m);
    g[i] = e;
    sum += e;
  }
  sum = WarpSum(sum);
  const T lse = Log(sum);
  T l = 0;
  for (int64_t i = lane; i < c; i += kWarp) {
    l += lab[i] * (lse - (in[i] - m));
    g[i] = g[i] / sum - lab[i];
  }
  l = WarpSum(l);
  if (lane == 0) loss[r] = l;
}

unsigned RowBlocks(int64_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

void RegisterSoftmax(OpRegistry& r, const std::string& op, bool log) {
  ShapeFn fn = ShapeFnOf(r, op);
  RegisterGpu(r, op, [fn, log](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(fn, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, x.dtype(), x.shape()));
    const int64_t c = x.dim(x.rank() - 1);
    if (c == 0 || x.num_elements() == 0) return Status::OK();
    const int64_t rows = x.num_elements() / c;
    kernels::DispatchFloat(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      SoftmaxKernel<T><<<RowBlocks(rows), kRowsPerBlock * kWarp, 0, StreamOf(ctx)>>>(
          x.data<T>(), y.data<T>(), rows, c, log);
    });
    return LaunchStatus(ctx);
  });
}

void RegisterXent(OpRegistry& r, const std::string& op, bool sparse) {
  ShapeFn fn = ShapeFnOf(r, op);
  RegisterGpu(r, op, [fn, sparse](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(fn, ctx));
    TROUPE_ASSIGN_OR_RETURN(Tensor loss, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    TROUPE_ASSIGN_OR_RETURN(Tensor back, AllocateOutput(ctx, 1, out[1].dtype, out[1].shape));
    const Tensor& f = ctx.input(0);
    const Tensor& l = ctx.input(1);
    const int64_t rows = f.dim(0), c = f.dim(1);
    if (rows == 0) return Status::OK();
    const unsigned blocks = RowBlocks(rows);
    const int threads = kRowsPerBlock * kWarp;
    cudaStream_t s = StreamOf(ctx);
    kernels::DispatchFloat(f.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (!sparse) {
        DenseXentKernel<T><<<blocks, threads, 0, s>>>(f.data<T>(), l.data<T>(), rows, c,
                                                      loss.data<T>(), back.data<T>());
      } else if (l.dtype() == DType::kInt32) {
        SparseXentKernel<T, int32_t><<<blocks, threads, 0, s>>>(
            f.data<T>(), l.data<int32_t>(), rows, c, loss.data<T>(), back.data<T>());
      } else {
        SparseXentKernel<T, int64_t><<<blocks, threads, 0, s>>>(
            f.data<T>(), l.data<int64_t>(), rows, c, loss.data<T>(), back.data<T>());
      }
    });
    return LaunchStatus(ctx);
  });
}

}  // namespace
}  // namespace gpu_ew

void RegisterGpuSoftmaxKernels(OpRegistry& r) {
  gpu_ew::RegisterSoftmax(r, "Softmax", false);
  gpu_ew::RegisterSoftmax(r, "LogSoftmax", true);
  gpu_ew::RegisterXent(r, "SparseSoftmaxCrossEntropyWithLogits", true);
  gpu_ew::RegisterXent(r, "SoftmaxCrossEntropyWithLogits", false);
}

}  // namespace troupe
