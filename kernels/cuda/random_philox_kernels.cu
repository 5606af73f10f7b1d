// CUDA kernels for the Philox random ops (see random_gpu.h): one thread per Philox call for the
// fixed-cost distributions, per truncated-normal group, or per raw block; every thread derives its
// counter from its output position exactly as the CPU fill does, so the layout does not depend on
// the launch configuration.
//
// Compiled with -fmad=false: an a*b+c the compiler fused would change bits; the fused ones
// (XLA's, glibc's FMA build) are written as fma()/fmaf() in random_math.h.
#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/random_device.h"
#include "kernels/cuda/random_launch.h"
#include "kernels/cuda/random_math.h"

namespace troupe::random::gpu::detail {
namespace {

// --- Philox: fixed-cost distributions
// -------------------------------------------------------------

// Per Philox call: G = kPerCall output values from the 4 words.
template <Kind K, Elem E>
struct PhiloxConv {
  using T = typename Storage<E>::T;
  static constexpr bool k64 = sizeof(T) == 8;
  static constexpr int kPerCall = (K == Kind::kNormal) ? (E == Elem::kF64 ? 2 : 4) : (k64 ? 2 : 4);

  __device__ __forceinline__ void operator()(const uint32_t* w, T* v, uint64_t lo,
                                             uint64_t range) const {
    if constexpr (K == Kind::kUniform) {
      if constexpr (E == Elem::kF32) {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = gm::Uint32ToFloat(w[i]);
      } else if constexpr (E == Elem::kF64) {
        v[0] = Uint64ToDouble(w[0], w[1]);
        v[1] = Uint64ToDouble(w[2], w[3]);
      } else if constexpr (E == Elem::kF16) {
        // (1.m as binary16) - 1 = m / 1024, exact in float and in half.
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = F2H(static_cast<float>(w[i] & 0x3ffu) * 0x1p-10f);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = F2BF(static_cast<float>(w[i] & 0x7fu) * 0x1p-7f);
      }
    } else if constexpr (K == Kind::kNormal) {
      float f[4];
      gm::BoxMullerFloat<kGlibcFma, kGlibcFma>(w[0], w[1], &f[0], &f[1]);
      gm::BoxMullerFloat<kGlibcFma, kGlibcFma>(w[2], w[3], &f[2], &f[3]);
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = FromFloat<E>(f[i]);
    } else if constexpr (K == Kind::kUniformInt) {
      if constexpr (k64) {
        v[0] = static_cast<T>(lo + Join64(w[0], w[1]) % range);
        v[1] = static_cast<T>(lo + Join64(w[2], w[3]) % range);
      } else {
        const uint32_t lo32 = static_cast<uint32_t>(lo), r32 = static_cast<uint32_t>(range);
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = static_cast<T>(lo32 + w[i] % r32);
      }
    } else {
      static_assert(K == Kind::kUniformFullInt);
      if constexpr (k64) {
        v[0] = static_cast<T>(Join64(w[0], w[1]));
        v[1] = static_cast<T>(Join64(w[2], w[3]));
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = static_cast<T>(w[i]);
      }
    }
  }
};

template <Kind K, Elem E>
__global__ void PhiloxFixedKernel(PhiloxArgs base, int64_t n, typename Storage<E>::T* out,
                                  uint64_t lo, uint64_t range) {
  using Conv = PhiloxConv<K, E>;
  using T = typename Conv::T;
  constexpr int G = Conv::kPerCall;
  const int64_t n_calls = (n + G - 1) / G;
  for (int64_t g = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; g < n_calls;
       g += int64_t{gridDim.x} * blockDim.x) {
    uint32_t b[4] = {base.counter[0], base.counter[1], base.counter[2], base.counter[3]};
    PhiloxAddToCounter(b, static_cast<uint64_t>(g));
    PhiloxRounds(b, base.key[0], base.key[1]);
    T v[G];
    Conv()(b, v, lo, range);
    const int64_t e0 = g * G;
    if (e0 + G <= n) {
#pragma unroll
      for (int j = 0; j < G; ++j) out[e0 + j] = v[j];
    } else {
      for (int j = 0; e0 + j < n; ++j) out[e0 + j] = v[j];
    }
  }
}

// Truncated normal (float32/half/bfloat16): group g of 4 values starts at counter base + g * 256
// (Skip) and hands out the words of successive calls one at a time (SingleSampleAdapter).
template <Elem E>
__global__ void PhiloxTruncatedNormalKernel(PhiloxArgs base, int64_t n,
                                            typename Storage<E>::T* out) {
  constexpr int G = 4;
  const int64_t n_groups = (n + G - 1) / G;
  for (int64_t g = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; g < n_groups;
       g += int64_t{gridDim.x} * blockDim.x) {
    uint32_t c[4] = {base.counter[0], base.counter[1], base.counter[2], base.counter[3]};
    PhiloxSkip(c, static_cast<uint64_t>(g) * (G * 256 / 4));
    uint32_t block[4] = {};
    int used = 4;
    auto next = [&]() -> uint32_t {
      if (used == 4) {
        for (int j = 0; j < 4; ++j) block[j] = c[j];
        PhiloxRounds(block, base.key[0], base.key[1]);
        PhiloxIncrement(c);
        used = 0;
      }
      return block[used++];
    };
    const int64_t rest = n - g * G;
    const int want = rest < G ? static_cast<int>(rest) : G;
    typename Storage<E>::T* o = out + g * G;
    int index = 0;
    while (index < want) {
      const uint32_t x0 = next();
      const uint32_t x1 = next();
      float f[2];
      gm::BoxMullerFloat<kGlibcFma, kGlibcFma>(x0, x1, &f[0], &f[1]);
      for (int k = 0; k < 2 && index < want; ++k) {
        if (fabsf(f[k]) < 2.0f) o[index++] = FromFloat<E>(f[k]);
      }
    }
  }
}

__global__ void PhiloxBlocksKernel(PhiloxArgs base, uint64_t first, int64_t n, uint4* out) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t b[4] = {base.counter[0], base.counter[1], base.counter[2], base.counter[3]};
    PhiloxAddToCounter(b, first);
    PhiloxAddToCounter(b, static_cast<uint64_t>(i));
    PhiloxRounds(b, base.key[0], base.key[1]);
    out[i] = make_uint4(b[0], b[1], b[2], b[3]);
  }
}

template <Kind K, Elem E>
Status LaunchPhiloxFixed(const LaunchArgs& a) {
  using T = typename Storage<E>::T;
  constexpr int G = PhiloxConv<K, E>::kPerCall;
  const int64_t calls = (a.n + G - 1) / G;
  PhiloxFixedKernel<K, E><<<GridFor(calls), kThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(
      a.philox, a.n, static_cast<T*>(a.out), a.lo_bits, a.range_bits);
  return Launched(a);
}

template <Elem E>
Status LaunchPhiloxTruncated(const LaunchArgs& a) {
  using T = typename Storage<E>::T;
  const int64_t groups = (a.n + 3) / 4;
  PhiloxTruncatedNormalKernel<E>
      <<<GridFor(groups), kThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(
          a.philox, a.n, static_cast<T*>(a.out));
  return Launched(a);
}

template <Kind K>
Status LaunchPhiloxFloatElem(const LaunchArgs& a) {
  switch (a.elem) {
    case Elem::kF32:
      return LaunchPhiloxFixed<K, Elem::kF32>(a);
    case Elem::kF16:
      return LaunchPhiloxFixed<K, Elem::kF16>(a);
    case Elem::kBF16:
      return LaunchPhiloxFixed<K, Elem::kBF16>(a);
    case Elem::kF64:
      if constexpr (K == Kind::kUniform) return LaunchPhiloxFixed<K, Elem::kF64>(a);
      break;
    default:
      break;
  }
  return InternalError(std::string(a.op) + ": no GPU Philox kernel for this dtype");
}

template <Kind K>
Status LaunchPhiloxIntElem(const LaunchArgs& a) {
  switch (a.elem) {
    case Elem::kI32:
      return LaunchPhiloxFixed<K, Elem::kI32>(a);
    case Elem::kU32:
      return LaunchPhiloxFixed<K, Elem::kU32>(a);
    case Elem::kI64:
      return LaunchPhiloxFixed<K, Elem::kI64>(a);
    case Elem::kU64:
      return LaunchPhiloxFixed<K, Elem::kU64>(a);
    default:
      return InternalError(std::string(a.op) + ": no GPU Philox kernel for this dtype");
  }
}

}  // namespace

Status LaunchPhilox(const LaunchArgs& a) {
  if (a.n <= 0) return Status::OK();
  switch (a.kind) {
    case Kind::kUniform:
      return LaunchPhiloxFloatElem<Kind::kUniform>(a);
    case Kind::kNormal:
      return LaunchPhiloxFloatElem<Kind::kNormal>(a);
    case Kind::kTruncatedNormal:
      switch (a.elem) {
        case Elem::kF32:
          return LaunchPhiloxTruncated<Elem::kF32>(a);
        case Elem::kF16:
          return LaunchPhiloxTruncated<Elem::kF16>(a);
        case Elem::kBF16:
          return LaunchPhiloxTruncated<Elem::kBF16>(a);
        default:
          return InternalError(std::string(a.op) + ": no GPU Philox kernel for this dtype");
      }
    case Kind::kUniformInt:
      return LaunchPhiloxIntElem<Kind::kUniformInt>(a);
    case Kind::kUniformFullInt:
      return LaunchPhiloxIntElem<Kind::kUniformFullInt>(a);
  }
  return InternalError(std::string(a.op) + ": unknown distribution");
}

Status LaunchPhiloxBlocks(int device, void* stream, const PhiloxArgs& base, uint64_t first,
                          int64_t n, uint32_t* out) {
  if (n <= 0) return Status::OK();
  PhiloxBlocksKernel<<<GridFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      base, first, n, reinterpret_cast<uint4*>(out));
  LaunchArgs a;
  a.device = device;
  a.op = "PhiloxBlocks";
  return Launched(a);
}

}  // namespace troupe::random::gpu::detail
