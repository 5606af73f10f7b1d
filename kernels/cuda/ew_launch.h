// Internal to kernels/cuda: device loops for elementwise ops. Unary: out[i] = f(in[i]). Binary
// with numpy broadcasting: the CPU's BroadcastPlan (coalesced dims, per-input strides, 0 on a
// broadcast dim) is copied into a small by-value struct; same-shape float32 runs use 16-byte
// loads, a flat kernel serves same-shape and scalar operands, a general kernel decomposes the
// output index over at most kMaxRank coalesced dims. 32-bit index math below 2^30 elements.
// Only .cu files include it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/broadcast.h"
#include "kernels/cuda/ew_common.h"

namespace troupe {
namespace gpu_ew {

constexpr int kMaxRank = 8;
constexpr int64_t kSmallIndex = int64_t{1} << 30;

struct BroadcastParams {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t sa[kMaxRank] = {};
  int64_t sb[kMaxRank] = {};
};

template <typename Tin, typename Tout, typename F, typename Index>
__global__ void UnaryKernel(const Tin* __restrict__ in, Tout* __restrict__ out, Index n, F f) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = f(in[i]);
  }
}

// Flat: a[i * sa], b[i * sb] with sa, sb in {0, 1} (same shape or a scalar operand).
template <typename Tin, typename Tout, typename F, typename Index>
__global__ void BinaryFlatKernel(const Tin* __restrict__ a, const Tin* __restrict__ b,
                                 Tout* __restrict__ out, Index n, Index sa, Index sb, F f) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = f(a[i * sa], b[i * sb]);
  }
}

template <typename F>
__global__ void BinaryFloat4Kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                                   float4* __restrict__ out, int64_t n4, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += stride) {
    const float4 x = a[i], y = b[i];
    out[i] = make_float4(f(x.x, y.x), f(x.y, y.y), f(x.z, y.z), f(x.w, y.w));
  }
}

template <typename Tin, typename Tout, typename F, typename Index>
__global__ void BinaryGeneralKernel(BroadcastParams p, const Tin* __restrict__ a,
                                    const Tin* __restrict__ b, Tout* __restrict__ out, Index n,
                                    F f) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    Index rem = i, oa = 0, ob = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const Index dim = static_cast<Index>(p.dims[d]);
      const Index idx = rem % dim;
      rem /= dim;
      oa += idx * static_cast<Index>(p.sa[d]);
      ob += idx * static_cast<Index>(p.sb[d]);
    }
    out[i] = f(a[oa], b[ob]);
  }
}

template <typename Tin, typename Tout, typename F>
Status LaunchUnary(const KernelContext& ctx, const Tin* in, Tout* out, int64_t n, F f) {
  if (n == 0) return Status::OK();
  cudaStream_t s = StreamOf(ctx);
  if (n < kSmallIndex) {
    UnaryKernel<Tin, Tout, F, int32_t>
        <<<GridFor(n), kThreads, 0, s>>>(in, out, static_cast<int32_t>(n), f);
  } else {
    UnaryKernel<Tin, Tout, F, int64_t><<<GridFor(n), kThreads, 0, s>>>(in, out, n, f);
  }
  return LaunchStatus(ctx);
}

inline bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// out = f(a, b) with the broadcasting described by `plan` (kernels::MakeBroadcastPlan).
template <typename Tin, typename Tout, typename F>
Status LaunchBinary(const KernelContext& ctx, const kernels::BroadcastPlan& plan, const Tin* a,
                    const Tin* b, Tout* out, F f) {
  const int64_t n = plan.num_elements;
  if (n == 0) return Status::OK();
  cudaStream_t s = StreamOf(ctx);
  const size_t k = plan.dims.size();
  if (k == 1) {
    const int64_t sa = plan.a_strides[0], sb = plan.b_strides[0];
    if constexpr (std::is_same_v<Tin, float> && std::is_same_v<Tout, float>) {
      if (sa == 1 && sb == 1 && n >= 1024 && Aligned16(a) && Aligned16(b) && Aligned16(out)) {
        const int64_t n4 = n / 4;
        BinaryFloat4Kernel<F><<<GridFor(n4), kThreads, 0, s>>>(
            reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
            reinterpret_cast<float4*>(out), n4, f);
        const int64_t done = n4 * 4;
        if (done < n) {
          BinaryFlatKernel<float, float, F, int32_t><<<1, kThreads, 0, s>>>(
              a + done, b + done, out + done, static_cast<int32_t>(n - done), 1, 1, f);
        }
        return LaunchStatus(ctx);
      }
    }
    if (n < kSmallIndex) {
      BinaryFlatKernel<Tin, Tout, F, int32_t>
          <<<GridFor(n), kThreads, 0, s>>>(a, b, out, static_cast<int32_t>(n),
                                           static_cast<int32_t>(sa), static_cast<int32_t>(sb), f);
    } else {
      BinaryFlatKernel<Tin, Tout, F, int64_t>
          <<<GridFor(n), kThreads, 0, s>>>(a, b, out, n, sa, sb, f);
    }
    return LaunchStatus(ctx);
  }
  if (k > static_cast<size_t>(kMaxRank)) {
    return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                              ": broadcasting needs " + std::to_string(k) +
                              " dims after merging; the GPU kernel handles at most " +
                              std::to_string(kMaxRank));
  }
  BroadcastParams p;
  p.rank = static_cast<int>(k);
  for (size_t d = 0; d < k; ++d) {
    p.dims[d] = plan.dims[d];
    p.sa[d] = plan.a_strides[d];
    p.sb[d] = plan.b_strides[d];
  }
  if (n < kSmallIndex) {
    BinaryGeneralKernel<Tin, Tout, F, int32_t>
        <<<GridFor(n), kThreads, 0, s>>>(p, a, b, out, static_cast<int32_t>(n), f);
  } else {
    BinaryGeneralKernel<Tin, Tout, F, int64_t><<<GridFor(n), kThreads, 0, s>>>(p, a, b, out, n, f);
  }
  return LaunchStatus(ctx);
}

}  // namespace gpu_ew
}  // namespace troupe
