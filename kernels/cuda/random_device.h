// Internal to the random .cu files (random_philox_kernels.cu, random_threefry_kernels.cu): the
// ThreeFry2x32 engine as a device function (Philox4x32-10 is core/philox.h's, __host__
// __device__ there), element conversions and storage types, launch geometry and the
// launch-error Status. Only .cu files include it, and
// only ones compiled with -fmad=false (kernels/CMakeLists.txt lists them).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/philox.h"
#include "core/status.h"
#include "kernels/cuda/random_launch.h"
#include "kernels/cuda/random_math.h"

namespace troupe::random::gpu::detail {

namespace gm = ::troupe::random::gpu_math;

// glibc's logf/sincosf: the FMA and baseline builds give the same floats on every argument
// Box-Muller passes (all 2^23 of each, checked by the host test), so either port works.
constexpr bool kGlibcFma = true;

// --- engines ----------------------------------------------------------------------------------

__device__ __forceinline__ void ThreeFry(uint64_t input, uint64_t key, uint32_t& out0,
                                         uint32_t& out1) {
  const uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t x0 = static_cast<uint32_t>(input) + ks[0];
  uint32_t x1 = static_cast<uint32_t>(input >> 32) + ks[1];
#pragma unroll
  for (int s = 1; s <= 5; ++s) {
    const int base = (s % 2 == 1) ? 0 : 4;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = __funnelshift_l(x1, x1, kRot[base + r]);
      x1 ^= x0;
    }
    x0 += ks[s % 3];
    x1 += ks[(s + 1) % 3] + static_cast<uint32_t>(s);
  }
  out0 = x0;
  out1 = x1;
}

// --- conversions --------------------------------------------------------------------------------

__device__ __forceinline__ uint16_t F2H(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float H2F(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float RoundHalf(float f) { return H2F(F2H(f)); }
// Eigen's float -> bfloat16: round to nearest even (NaN -> quiet NaN).
__device__ __forceinline__ uint16_t F2BF(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// XLA's float32 -> bfloat16 for random ops: truncation.
__device__ __forceinline__ uint16_t TruncBF(float f) {
  return static_cast<uint16_t>(__float_as_uint(f) >> 16);
}

template <Elem E>
struct Storage;
template <>
struct Storage<Elem::kF32> {
  using T = float;
};
template <>
struct Storage<Elem::kF64> {
  using T = double;
};
template <>
struct Storage<Elem::kF16> {
  using T = uint16_t;
};
template <>
struct Storage<Elem::kBF16> {
  using T = uint16_t;
};
template <>
struct Storage<Elem::kI32> {
  using T = int32_t;
};
template <>
struct Storage<Elem::kI64> {
  using T = int64_t;
};
template <>
struct Storage<Elem::kU32> {
  using T = uint32_t;
};
template <>
struct Storage<Elem::kU64> {
  using T = uint64_t;
};

// A float result in the output's float type (RNE, as static_cast<half/bfloat16>(float)).
template <Elem E>
__device__ __forceinline__ typename Storage<E>::T FromFloat(float f) {
  if constexpr (E == Elem::kF32) {
    return f;
  } else if constexpr (E == Elem::kF16) {
    return F2H(f);
  } else {
    static_assert(E == Elem::kBF16);
    return F2BF(f);
  }
}

__device__ __forceinline__ double Uint64ToDouble(uint32_t x0, uint32_t x1) {
  const uint64_t man = (uint64_t{x0 & 0xfffffu} << 32) | x1;
  return __longlong_as_double(static_cast<long long>((uint64_t{1023} << 52) | man)) - 1.0;
}

__device__ __forceinline__ uint64_t Join64(uint32_t lo, uint32_t hi) {
  return uint64_t{lo} | (uint64_t{hi} << 32);
}

constexpr int kThreads = 256;

inline int GridFor(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

inline Status Launched(const LaunchArgs& a) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return InternalError("gpu:" + std::to_string(a.device) + ": " + a.op +
                         ": kernel launch failed: " + cudaGetErrorString(err));
  }
  return Status::OK();
}

}  // namespace troupe::random::gpu::detail
