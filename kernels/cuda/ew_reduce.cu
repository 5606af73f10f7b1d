// The GPU reduction engine (see ew_reduce.h). Mirrors kernels/reductions.cc step for step:
//  - B == 1: each (row, 16384-chunk) is reduced by a group of 16 threads, lane l taking elements
//    l, l+16, ... in order (the CPU's LaneSum), then lanes combined pairwise 8,4,2,1 (shuffles);
//    Prod runs one lane sequentially like the CPU. More than one chunk: partials combined in
//    chunk order by one thread per row.
//  - B > 1: one thread per (a, row chunk, column) accumulates rows in order, then one thread per
//    (a, column) combines the chunk partials in order.
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/ew_launch.h"
#include "kernels/cuda/ew_reduce.h"
#include "kernels/cuda/ew_transpose.h"

namespace troupe {
namespace gpu_ew {
namespace {

using kernels::Reducer;

// Constants of kernels/reductions.cc; the CPU's partition (and so its rounding) depends on them.
constexpr int64_t kChunk = 16384;
constexpr int64_t kColBlock = 4096;
constexpr int kLanes = 16;

struct SumC {
  static constexpr int kLanesUsed = kLanes;
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return a + b;
  }
};
struct ProdC {
  static constexpr int kLanesUsed = 1;  // the CPU multiplies a chunk sequentially
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return a * b;
  }
};
struct MaxC {
  static constexpr int kLanesUsed = kLanes;  // any order gives the same max (NaN aside)
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return a < b ? b : a;  // std::max / Eigen pmax
  }
};
struct MinC {
  static constexpr int kLanesUsed = kLanes;
  template <typename T>
  __device__ static T Combine(T a, T b) {
    return b < a ? b : a;  // std::min / Eigen pmin
  }
};

// One 16-thread group per unit u = a * nc + c: reduce x[a*R + c*kChunk, +len). Writes dst[u].
template <typename T, typename C>
__global__ void ChunkReduceKernel(const T* __restrict__ x, int64_t R, int64_t nc, int64_t units,
                                  T identity, T* __restrict__ dst) {
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t u = g / kLanes;
  const int lane = static_cast<int>(g % kLanes);
  T acc = identity;
  if (u < units && lane < C::kLanesUsed) {
    const int64_t a = u / nc, r0 = (u % nc) * kChunk;
    const int64_t len = R - r0 < kChunk ? R - r0 : kChunk;
    const T* p = x + a * R + r0;
    for (int64_t i = lane; i < len; i += C::kLanesUsed) acc = C::Combine(acc, p[i]);
  }
  // Lanes l and l + w combine for w = 8, 4, 2, 1 (the CPU's pairwise lane combine). Every thread
  // of the warp takes part in the shuffles.
  if constexpr (C::kLanesUsed > 1) {
#pragma unroll
    for (int w = kLanes / 2; w > 0; w /= 2) {
      const T other = __shfl_down_sync(0xffffffffu, acc, w, kLanes);
      if (lane < w) acc = C::Combine(acc, other);
    }
  }
  if (u < units && lane == 0) dst[u] = acc;
}

// out[a] = partial[a*nc] combined with partial[a*nc + 1 ..] in order.
template <typename T, typename C>
__global__ void CombineRowsKernel(const T* __restrict__ partial, int64_t A, int64_t nc,
                                  T* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t a = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; a < A; a += step) {
    const T* p = partial + a * nc;
    T acc = p[0];
    for (int64_t c = 1; c < nc; ++c) acc = C::Combine(acc, p[c]);
    out[a] = acc;
  }
}

// B > 1, one thread per (a, c, col): rows [c*rpc, min(R, (c+1)*rpc)) accumulated in order.
template <typename T, typename C>
__global__ void ColumnChunkKernel(const T* __restrict__ x, int64_t R, int64_t B, int64_t nc,
                                  int64_t rpc, int64_t n, T* __restrict__ dst) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += step) {
    const int64_t col = u % B, c = (u / B) % nc, a = u / (B * nc);
    const int64_t r0 = c * rpc, r1 = R < r0 + rpc ? R : r0 + rpc;
    const T* p = x + (a * R + r0) * B + col;
    T acc = p[0];
    for (int64_t r = 1; r < r1 - r0; ++r) acc = C::Combine(acc, p[r * B]);
    dst[u] = acc;  // u == (a * nc + c) * B + col
  }
}

// out[a*B + col] = partial[(a*nc)*B + col] combined over c in order.
template <typename T, typename C>
__global__ void CombineColumnsKernel(const T* __restrict__ partial, int64_t B, int64_t nc,
                                     int64_t n, T* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += step) {
    const int64_t a = u / B, col = u % B;
    const T* p = partial + a * nc * B + col;
    T acc = p[0];
    for (int64_t c = 1; c < nc; ++c) acc = C::Combine(acc, p[c * B]);
    out[u] = acc;
  }
}

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = value;
  }
}

// Mean: the sum divided by the count, as the CPU does (integer division for ints).
template <typename T>
__global__ void DivideKernel(T* out, int64_t n, T count) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = out[i] / count;
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

template <typename T, typename C>
Status ReduceARB(const KernelContext& ctx, const T* x, int64_t A, int64_t R, int64_t B, T identity,
                 T* out) {
  cudaStream_t s = StreamOf(ctx);
  if (A * B == 0) return Status::OK();
  if (R == 0) {
    FillKernel<T><<<GridFor(A * B), kThreads, 0, s>>>(out, A * B, identity);
    return LaunchStatus(ctx);
  }
  if (B == 1) {
    const int64_t nc = (R + kChunk - 1) / kChunk;
    const int64_t units = A * nc;
    Scratch partial;
    if (nc > 1)
      TROUPE_RETURN_IF_ERROR(partial.Allocate(ctx, static_cast<size_t>(units) * sizeof(T)));
    T* dst = nc > 1 ? partial.as<T>() : out;
    const int64_t threads = units * kLanes;
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    if (blocks > std::numeric_limits<int32_t>::max()) {
      return UnimplementedError(std::string(ctx.op_name()) + ": reduction too large for the GPU");
    }
    ChunkReduceKernel<T, C>
        <<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(x, R, nc, units, identity, dst);
    TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
    if (nc > 1) {
      CombineRowsKernel<T, C><<<GridFor(A), kThreads, 0, s>>>(partial.as<T>(), A, nc, out);
      TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
    }
    return Status::OK();
  }
  const int64_t cb = B < kColBlock ? B : kColBlock;
  const int64_t rpc = kChunk * 4 / cb > 1 ? kChunk * 4 / cb : 1;
  const int64_t nc = (R + rpc - 1) / rpc;
  Scratch partial;
  if (nc > 1) {
    TROUPE_RETURN_IF_ERROR(partial.Allocate(ctx, static_cast<size_t>(A * nc * B) * sizeof(T)));
  }
  const int64_t n = A * nc * B;
  ColumnChunkKernel<T, C>
      <<<GridFor(n), kThreads, 0, s>>>(x, R, B, nc, rpc, n, nc > 1 ? partial.as<T>() : out);
  TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
  if (nc > 1) {
    CombineColumnsKernel<T, C>
        <<<GridFor(A * B), kThreads, 0, s>>>(partial.as<T>(), B, nc, A * B, out);
    TROUPE_RETURN_IF_ERROR(LaunchStatus(ctx));
  }
  return Status::OK();
}

template <typename T>
Status ReduceTyped(const KernelContext& ctx, Reducer reducer, const T* x, int64_t A, int64_t R,
                   int64_t B, T* out) {
  const T id = IdentityOf<T>(reducer);
  switch (reducer) {
    case Reducer::kSum:
      return ReduceARB<T, SumC>(ctx, x, A, R, B, id, out);
    case Reducer::kMean: {
      TROUPE_RETURN_IF_ERROR((ReduceARB<T, SumC>(ctx, x, A, R, B, id, out)));
      if (R > 0 && A * B > 0) {
        DivideKernel<T>
            <<<GridFor(A * B), kThreads, 0, StreamOf(ctx)>>>(out, A * B, static_cast<T>(R));
        return LaunchStatus(ctx);
      }
      return Status::OK();
    }
    case Reducer::kMax:
      return ReduceARB<T, MaxC>(ctx, x, A, R, B, id, out);
    case Reducer::kMin:
      return ReduceARB<T, MinC>(ctx, x, A, R, B, id, out);
    case Reducer::kProd:
      return ReduceARB<T, ProdC>(ctx, x, A, R, B, id, out);
  }
  return InternalError("unknown reducer");
}

}  // namespace

Status ReduceGpu(const KernelContext& ctx, Reducer reducer, const Tensor& x,
                 std::span<const int64_t> axes, Tensor& out) {
  const int rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) return InternalError("ReduceGpu: axis out of range");
    reduced[static_cast<size_t>(a)] = true;
  }
  // The CPU's grouping (kernels/reductions.cc ReduceInto), so A, R, B and with them the
  // partition and rounding are the same.
  struct Group {
    int64_t size;
    bool reduce;
  };
  std::vector<Group> groups;
  for (int d = 0; d < rank; ++d) {
    if (x.dim(d) == 1) continue;
    const bool r = reduced[static_cast<size_t>(d)];
    if (!groups.empty() && groups.back().reduce == r) {
      groups.back().size *= x.dim(d);
    } else {
      groups.push_back({x.dim(d), r});
    }
  }
  int64_t A = 1, R = 1, B = 1;
  int num_r = 0;
  for (const Group& g : groups) num_r += g.reduce ? 1 : 0;
  const bool simple = !(num_r > 1 || groups.size() > 3);
  Scratch moved;
  const void* src = x.raw_data();
  if (simple) {
    bool seen_r = false;
    for (const Group& g : groups) {
      if (g.reduce) {
        R = g.size;
        seen_r = true;
      } else {
        (seen_r ? B : A) *= g.size;
      }
    }
  } else {
    std::vector<int> perm;
    for (int pass = 0; pass < 2; ++pass) {
      for (int d = 0; d < rank; ++d) {
        if (reduced[static_cast<size_t>(d)] == (pass == 1)) {
          perm.push_back(d);
          (pass == 0 ? A : R) *= x.dim(d);
        }
      }
    }
    TROUPE_RETURN_IF_ERROR(moved.Allocate(ctx, x.byte_size()));
    TROUPE_RETURN_IF_ERROR(TransposeGpu(ctx, x, perm, moved.as<void>()));
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
