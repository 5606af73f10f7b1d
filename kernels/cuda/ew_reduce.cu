// The GPU reduction engine (see ew_reduce.h). x is viewed as [A, R, B] (kept dims before the
// reduced ones, the reduced ones merged, kept dims after; anything else is transposed into
// [A, R] first) and out[a, b] = reduce over r. Every choice below is a function of (A, R, B):
//  - R <= kSerialMaxR: one thread per output, r in order.
//  - B == 1, R <= kWarpMaxR: one warp per row; lane l takes r = l, l+32, ... in order, then a
//    fixed shuffle tree (16, 8, 4, 2, 1).
//  - B == 1, longer rows: the row is cut into chunks of kRowChunk elements (more when that would
//    give over kMaxChunks chunks); one 256-thread block per (row, chunk): thread t takes
//    t, t+256, ... in order, then warp trees and a tree over the 8 warp results. Chunk partials
//    [A, nc] go through a second pass.
//  - B > 1 (column sums, e.g. a conv bias gradient [N*H*W, C]): a block covers W = min(B, 256)
//    columns with L = 256 / W row lanes (W = 256, L = 1 when B > 256) so a warp reads consecutive
//    addresses whatever B is; rows are cut into chunks of L * kColRowsPerThread rows (more when
//    that would give over kMaxChunks chunks); lane l sums rows l, l+L, ... of its chunk in order,
//    then a fixed shared-memory tree over the L lanes. Chunk partials [A, nc, B] go through a
//    second pass.
//  - Second pass over partials [A, nc, B] (nc <= kMaxChunks): the warp kernel above per (a, b),
//    or the serial kernel when nc is short or there are many wide outputs (coalesced columns).
// Mean divides the finished sum by R (as the CPU does; integer division for ints) in the pass
// that writes the output.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/ew_launch.h"
#include "kernels/cuda/ew_reduce.h"
#include "kernels/cuda/ew_transpose.h"

namespace troupe {
namespace gpu_ew {
namespace {

using kernels::Reducer;

static_assert(kThreads == 256, "the block trees below assume 256 threads (8 warps)");
constexpr int kWarps = kThreads / 32;
constexpr int64_t kSerialMaxR = 16;
constexpr int64_t kWarpMaxR = 1024;
constexpr int64_t kRowChunk = 8192;  // 32 elements per thread
constexpr int64_t kColRowsPerThread = 16;
constexpr int64_t kMaxChunks = 1024;
// Second pass: serial per output once there are this many outputs of B >= 32 columns.
constexpr int64_t kSerialMinOutputs = 65536;

struct SumC {
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return a + b;
  }
};
struct ProdC {
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return a * b;
  }
};
struct MaxC {
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return a < b ? b : a;  // std::max / Eigen pmax
  }
};
struct MinC {
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return b < a ? b : a;  // std::min / Eigen pmin
  }
};

// How the pass that writes the output finishes a value: Mean divides by the count.
template <typename T>
struct Finish {
  bool divide;
  T count;
  __device__ T operator()(T v) const { return divide ? v / count : v; }
};

// Lane 0 gets lanes 0..31 combined by the fixed tree (offsets 16, 8, 4, 2, 1). The whole warp
// must call it.
template <typename T, typename C>
__device__ T WarpReduce(T v) {
#pragma unroll
  for (int w = 16; w > 0; w /= 2) v = C::Combine(v, __shfl_down_sync(0xffffffffu, v, w));
  return v;
}

// Thread 0 gets the block's 256 values combined: warp trees, then a warp tree over the 8 warp
// results (the other lanes hold the identity). The whole block must call it, once per kernel.
template <typename T, typename C>
__device__ T BlockReduce(T v, T identity) {
  __shared__ T warp_vals[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = WarpReduce<T, C>(v);
  if (lane == 0) warp_vals[warp] = v;
  __syncthreads();
  if (warp == 0) v = WarpReduce<T, C>(lane < kWarps ? warp_vals[lane] : identity);
  return v;
}

// One thread per output u = a * B + b: r in order. R >= 1.
template <typename T, typename C>
__global__ void SerialKernel(const T* __restrict__ x, int64_t R, int64_t B, int64_t n,
                             Finish<T> fin, T* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += step) {
    const int64_t a = u / B, b = u % B;
    const T* p = x + a * R * B + b;
    T acc = p[0];
    for (int64_t r = 1; r < R; ++r) acc = C::Combine(acc, p[r * B]);
    out[u] = fin(acc);
  }
}

// One warp per output g = a * B + b; lane l combines r = l, l+32, ... in order, then WarpReduce.
template <typename T, typename C>
__global__ void WarpKernel(const T* __restrict__ x, int64_t R, int64_t B, int64_t n, T identity,
                           Finish<T> fin, T* __restrict__ out) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (g >= n) return;  // uniform across the warp
  const int lane = threadIdx.x % 32;
  const int64_t a = g / B, b = g % B;
  const T* p = x + a * R * B + b;
  T acc = identity;
#pragma unroll 4
  for (int64_t r = lane; r < R; r += 32) acc = C::Combine(acc, p[r * B]);
  acc = WarpReduce<T, C>(acc);
  if (lane == 0) out[g] = fin(acc);
}

// B == 1: block u = a * nc + c combines x[a*R + c*chunk, + min(chunk, R - c*chunk)) into dst[u].
template <typename T, typename C>
__global__ void RowChunkKernel(const T* __restrict__ x, int64_t R, int64_t nc, int64_t chunk,
                               T identity, Finish<T> fin, T* __restrict__ dst) {
  const int64_t u = blockIdx.x;
  const int64_t a = u / nc, r0 = (u % nc) * chunk;
  const int64_t len = R - r0 < chunk ? R - r0 : chunk;
  const T* p = x + a * R + r0;
  T acc = identity;
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < len; i += kThreads) acc = C::Combine(acc, p[i]);
  acc = BlockReduce<T, C>(acc, identity);
  if (threadIdx.x == 0) dst[u] = fin(acc);
}

// B > 1: block u = (a * nc + c) * tiles + j covers columns [j*W, min(B, (j+1)*W)) and rows
// [c*rpc, min(R, (c+1)*rpc)). Thread t = lane * W + k (lane < L) takes column j*W + k and rows
// r0 + lane, r0 + lane + L, ... in order; then lanes are combined by a fixed tree (lane i takes
// lane i + h for h = P/2, ..., 1, P the power of two >= L). dst[(a * nc + c) * B + col].
template <typename T, typename C>
__global__ void ColumnChunkKernel(const T* __restrict__ x, int64_t R, int64_t B, int W, int L,
                                  int P, int64_t tiles, int64_t nc, int64_t rpc, T identity,
                                  Finish<T> fin, T* __restrict__ dst) {
  __shared__ T vals[kThreads];
  const int64_t u = blockIdx.x;
  const int64_t j = u % tiles, c = (u / tiles) % nc, a = u / (tiles * nc);
  const int t = threadIdx.x;
  const int k = t % W, lane = t / W;
  const int64_t col = j * W + k;
  const int64_t r0 = c * rpc;
  const int64_t r1 = R < r0 + rpc ? R : r0 + rpc;
  T acc = identity;
  if (lane < L && col < B) {
    const T* p = x + a * R * B + col;
#pragma unroll 4
    for (int64_t r = r0 + lane; r < r1; r += L) acc = C::Combine(acc, p[r * B]);
  }
  vals[t] = acc;
  __syncthreads();
  for (int h = P / 2; h > 0; h /= 2) {
    if (lane < h && lane + h < L) vals[t] = C::Combine(vals[t], vals[t + h * W]);
    __syncthreads();
  }
  if (lane == 0 && col < B) dst[(a * nc + c) * B + col] = fin(vals[t]);
}

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = value;
  }
}

template <typename T>
T IdentityOf(Reducer r) {
  switch (r) {
    case Reducer::kProd:
      return T(1);
    case Reducer::kMax:
      return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
    case Reducer::kMin:
      return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::max();
    default:
      return T(0);
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grids are one-dimensional, one block per unit of work.
Status CheckBlocks(const KernelContext& ctx, int64_t blocks, int64_t A, int64_t R, int64_t B) {
  if (blocks <= std::numeric_limits<int32_t>::max()) return Status::OK();
  return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                            ": reduction of [" + std::to_string(A) + ", " + std::to_string(R) +
                            ", " + std::to_string(B) +
                            "] (kept, reduced, kept) is too large for one GPU launch");
}

template <typename T, typename C>
Status LaunchWarp(const KernelContext& ctx, const T* x, int64_t A, int64_t R, int64_t B, T identity,
                  Finish<T> fin, T* out) {
  const int64_t blocks = CeilDiv(A * B, kWarps);
  TROUPE_RETURN_IF_ERROR(CheckBlocks(ctx, blocks, A, R, B));
  WarpKernel<T, C><<<static_cast<unsigned>(blocks), kThreads, 0, StreamOf(ctx)>>>(
      x, R, B, A * B, identity, fin, out);
  return LaunchStatus(ctx);
}

// Partials [A, nc, B] -> out[A, B].
template <typename T, typename C>
Status SecondPass(const KernelContext& ctx, const T* partial, int64_t A, int64_t nc, int64_t B,
                  T identity, Finish<T> fin, T* out) {
  if (nc <= kSerialMaxR || (B >= 32 && A * B >= kSerialMinOutputs)) {
    SerialKernel<T, C>
        <<<GridFor(A * B), kThreads, 0, StreamOf(ctx)>>>(partial, nc, B, A * B, fin, out);
    return LaunchStatus(ctx);
  }
  return LaunchWarp<T, C>(ctx, partial, A, nc, B, identity, fin, out);
}

template <typename T, typename C>
Status ReduceARB(const KernelContext& ctx, const T* x, int64_t A, int64_t R, int64_t B, T identity,
                 Finish<T> fin, T* out) {
  cudaStream_t s = StreamOf(ctx);
  if (A * B == 0) return Status::OK();
  if (R == 0) {  // the identity (Mean too: the CPU divides only when R > 0)
    FillKernel<T><<<GridFor(A * B), kThreads, 0, s>>>(out, A * B, identity);
    return LaunchStatus(ctx);
  }
  if (R <= kSerialMaxR) {
    SerialKernel<T, C><<<GridFor(A * B), kThreads, 0, s>>>(x, R, B, A * B, fin, out);
    return LaunchStatus(ctx);
  }
  const Finish<T> none{false, T(1)};
  if (B == 1) {
    if (R <= kWarpMaxR) return LaunchWarp<T, C>(ctx, x, A, R, 1, identity, fin, out);
    int64_t chunk = kRowChunk;
    int64_t nc = CeilDiv(R, chunk);
    if (nc > kMaxChunks) {
      chunk = CeilDiv(CeilDiv(R, kMaxChunks), kThreads) * kThreads;
      nc = CeilDiv(R, chunk);
    }
    const int64_t units = A * nc;
    TROUPE_RETURN_IF_ERROR(CheckBlocks(ctx, units, A, R, B));
    Scratch partial;
    if (nc > 1) {
      TROUPE_RETURN_IF_ERROR(partial.Allocate(ctx, static_cast<size_t>(units) * sizeof(T)));
    }
    RowChunkKernel<T, C><<<static_cast<unsigned>(units), kThreads, 0, s>>>(
        x, R, nc, chunk, identity, nc > 1 ? none : fin, nc > 1 ? partial.as<T>() : out);
    TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
    if (nc == 1) return Status::OK();
    return SecondPass<T, C>(ctx, partial.as<T>(), A, nc, 1, identity, fin, out);
  }
  const int W = static_cast<int>(B <= kThreads ? B : kThreads);
  const int L = kThreads / W;
  int P = 1;
  while (P < L) P *= 2;
  const int64_t tiles = CeilDiv(B, W);
  int64_t rpc = L * kColRowsPerThread;
  int64_t nc = CeilDiv(R, rpc);
  if (nc > kMaxChunks) {
    rpc = CeilDiv(CeilDiv(R, kMaxChunks), L) * L;
    nc = CeilDiv(R, rpc);
  }
  const int64_t units = A * nc * tiles;
  TROUPE_RETURN_IF_ERROR(CheckBlocks(ctx, units, A, R, B));
  Scratch partial;
  if (nc > 1) {
    TROUPE_RETURN_IF_ERROR(partial.Allocate(ctx, static_cast<size_t>(A * nc * B) * sizeof(T)));
  }
  ColumnChunkKernel<T, C><<<static_cast<unsigned>(units), kThreads, 0, s>>>(
      x, R, B, W, L, P, tiles, nc, rpc, identity, nc > 1 ? none : fin,
      nc > 1 ? partial.as<T>() : out);
  TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
  if (nc == 1) return Status::OK();
  return SecondPass<T, C>(ctx, partial.as<T>(), A, nc, B, identity, fin, out);
}

template <typename T>
Status ReduceTyped(const KernelContext& ctx, Reducer reducer, const T* x, int64_t A, int64_t R,
                   int64_t B, T* out) {
  const T id = IdentityOf<T>(reducer);
  const Finish<T> none{false, T(1)};
  switch (reducer) {
    case Reducer::kSum:
      return ReduceARB<T, SumC>(ctx, x, A, R, B, id, none, out);
    case Reducer::kMean:
      // Like the CPU (Eigen's MeanReducer): the sum divided by the count.
      return ReduceARB<T, SumC>(ctx, x, A, R, B, id, Finish<T>{true, static_cast<T>(R)}, out);
    case Reducer::kMax:
      return ReduceARB<T, MaxC>(ctx, x, A, R, B, id, none, out);
    case Reducer::kMin:
      return ReduceARB<T, MinC>(ctx, x, A, R, B, id, none, out);
    case Reducer::kProd:
      return ReduceARB<T, ProdC>(ctx, x, A, R, B, id, none, out);
  }
  return InternalError("unknown reducer");
}

}  // namespace

Status ReduceGpu(const KernelContext& ctx, Reducer reducer, const Tensor& x,
                 std::span<const int64_t> axes, Tensor& out) {
  // One reduced group between kept ones is viewed in place as [A, R, B]; otherwise kept dims
  // are transposed first.
  TROUPE_ASSIGN_OR_RETURN(const kernels::ReductionPlan plan,
                          kernels::PlanReduction("ReduceGpu", x.shape(), axes));
  const int64_t A = plan.A, R = plan.R, B = plan.B;
  Scratch moved;
  const void* src = x.raw_data();
  if (!plan.simple) {
    TROUPE_RETURN_IF_ERROR(moved.Allocate(ctx, x.byte_size()));
    TROUPE_RETURN_IF_ERROR(TransposeGpu(ctx, x, plan.perm, moved.as<void>()));
    src = moved.as<void>();
  }
  if (out.num_elements() != A * B) {
    return InternalError("ReduceGpu: output has " + std::to_string(out.num_elements()) +
                         " elements, expected " + std::to_string(A * B));
  }
  Status status;
  bool ok = kernels::DispatchReal(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    status = ReduceTyped<T>(ctx, reducer, static_cast<const T*>(src), A, R, B, out.data<T>());
  });
  if (!ok) return UnsupportedDType(ctx, x.dtype(), "float32, float64, int32, int64");
  return status;
}

}  // namespace gpu_ew
}  // namespace troupe
