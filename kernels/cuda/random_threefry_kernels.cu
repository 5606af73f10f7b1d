// CUDA kernels for the ThreeFry random ops in XLA's layout (see random_gpu.h): one thread per
// output element or per Box-Muller pair; every thread derives its counter from its output position
// exactly as the CPU fill does, so the layout does not depend on the launch configuration.
//
// Compiled with -fmad=false: an a*b+c the compiler fused would change bits; the fused ones
// (XLA's, glibc's FMA build) are written as fma()/fmaf() in random_math.h.
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "kernels/cuda/random_device.h"
#include "kernels/cuda/random_launch.h"
#include "kernels/cuda/random_math.h"

namespace troupe::random::gpu::detail {
namespace {

// Bits of element j of a 32-bit RngBitGenerator output whose shape splits as `s`: input
// (p, e / 2, q) of the half shape gives word e % 2.
__device__ __forceinline__ uint32_t Bits32At(int64_t j, const SplitArgs& s, uint64_t key,
                                             uint64_t counter) {
  const int64_t row = s.d * s.post;
  const int64_t p = j / row;
  const int64_t rem = j - p * row;
  const int64_t e = rem / s.post;
  const int64_t q = rem - e * s.post;
  const int64_t i = (p * s.h + (e >> 1)) * s.post + q;
  uint32_t x0, x1;
  ThreeFry(counter + static_cast<uint64_t>(i), key, x0, x1);
  return (e & 1) ? x1 : x0;
}

__device__ __forceinline__ uint64_t Bits64At(int64_t j, uint64_t key, uint64_t counter) {
  uint32_t x0, x1;
  ThreeFry(counter + static_cast<uint64_t>(j), key, x0, x1);
  return Join64(x0, x1);
}

__device__ __forceinline__ float XlaBitsToFloat(uint32_t b) {
  return static_cast<float>(b >> 9) * 1.1920928955078125e-7f;
}
__device__ __forceinline__ double XlaBitsToDouble(uint64_t b) {
  return static_cast<double>(b >> 12) * 2.220446049250313080847263336181640625e-16;
}
// (1.m as binary16) - 1 from the low 10 bits, as a float (exact).
__device__ __forceinline__ float XlaBitsToHalfValue(uint32_t b) {
  return static_cast<float>(b & 0x3ffu) * 0x1p-10f;
}

// XLA's float16 truncated normal (xla_cpu_math.cc TruncatedNormalF16): float32 math rounded to
// half after every op (Troupe's float16 rule, xla::XlaFloat16::kRoundEachOp).
__device__ __forceinline__ float XlaTruncatedNormalHalf(float u, float alpha, float z) {
  const float p = RoundHalf(RoundHalf(z * u) + alpha);
  const float eps = 0.0009765625f;
  float v = RoundHalf(RoundHalf(2.0f * p) - 1.0f);
  v = RoundHalf(fminf(fmaxf(v, RoundHalf(-1.0f + eps)), RoundHalf(1.0f - eps)));
  const float x = RoundHalf(RoundHalf(1.41421353816986083984f) * RoundHalf(gm::XlaErfInvF32(v)));
  return RoundHalf(fminf(fmaxf(x, -2.0f), 2.0f));
}

template <Kind K, Elem E>
__global__ void ThreeFryElementKernel(LaunchArgs a) {
  using T = typename Storage<E>::T;
  constexpr bool k64 = sizeof(T) == 8;
  T* out = static_cast<T*>(a.out);
  for (int64_t j = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < a.n;
       j += int64_t{gridDim.x} * blockDim.x) {
    if constexpr (k64) {
      const uint64_t bits = Bits64At(j, a.key, a.counter);
      if constexpr (K == Kind::kUniform) {
        out[j] = XlaBitsToDouble(bits);
      } else if constexpr (K == Kind::kUniformInt) {
        const uint64_t dist = bits % a.range_bits;
        const uint64_t half_dist = dist >> 1;
        out[j] = static_cast<T>(a.lo_bits + half_dist + (dist - half_dist));
      } else {
        static_assert(K == Kind::kUniformFullInt);
        out[j] = static_cast<T>(bits);
      }
    } else {
      const uint32_t bits = Bits32At(j, a.split, a.key, a.counter);
      if constexpr (K == Kind::kUniform) {
        if constexpr (E == Elem::kF32) {
          out[j] = XlaBitsToFloat(bits);
        } else if constexpr (E == Elem::kF16) {
          out[j] = F2H(XlaBitsToHalfValue(bits));
        } else {
          out[j] = TruncBF(XlaBitsToFloat(bits));
        }
      } else if constexpr (K == Kind::kTruncatedNormal) {
        if constexpr (E == Elem::kF16) {
          out[j] = F2H(
              XlaTruncatedNormalHalf(XlaBitsToHalfValue(bits), H2F(a.tn_alpha_h), H2F(a.tn_z_h)));
        } else {
          const float u = XlaBitsToFloat(bits) + 1.17549435082228750797e-38f;  // + FLT_MIN
          const float v = gm::XlaTruncatedNormalF32(u, a.tn_alpha, a.tn_z);
          if constexpr (E == Elem::kF32) {
            out[j] = v;
          } else {
            out[j] = TruncBF(v);
          }
        }
      } else if constexpr (K == Kind::kUniformInt) {
        const uint32_t r = static_cast<uint32_t>(a.range_bits);
        const uint32_t dist = bits % r;
        const uint32_t half_dist = dist >> 1;
        out[j] = static_cast<T>(static_cast<uint32_t>(a.lo_bits) + half_dist + (dist - half_dist));
      } else {
        static_assert(K == Kind::kUniformFullInt);
        out[j] = static_cast<T>(bits);
      }
    }
  }
}

// XLA's Box-Muller: pair (r, q) of the half shape takes uniforms u[2r * post + q] and
// u[(2r + 1) * post + q] of the concat shape (drawn with the concat shape's own split) and
// writes output (p, 2h, q) and, when it exists, (p, 2h + 1, q).
template <Elem E>
__global__ void ThreeFryNormalKernel(LaunchArgs a) {
  using T = typename Storage<E>::T;
  T* out = static_cast<T*>(a.out);
  const SplitArgs s = a.split;
  const int64_t pairs = s.pre * s.h * s.post;
  for (int64_t t = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; t < pairs;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = t / s.post, q = t - r * s.post;
    const int64_t p = r / s.h, h = r - p * s.h;
    const int64_t ja = (r * 2) * s.post + q;
    const uint32_t ba = Bits32At(ja, a.concat_split, a.key, a.counter);
    const uint32_t bb = Bits32At(ja + s.post, a.concat_split, a.key, a.counter);
    T o0, o1;
    if constexpr (E == Elem::kF16) {
      const float x0 = XlaBitsToHalfValue(ba), x1 = XlaBitsToHalfValue(bb);
      const float tiny = RoundHalf(1.0e-7f);
      const float u1 = x0 < tiny ? tiny : x0;
      const float v1 = RoundHalf(RoundHalf(static_cast<float>(2.0f * M_PI)) * x1);
      const float lg = RoundHalf(gm::XlaLogF32(u1));
      const float u2 = RoundHalf(sqrtf(RoundHalf(-2.0f * lg)));
      float sn, cs;
      gm::GlibcSincosf<kGlibcFma>(v1, &sn, &cs);
      o0 = F2H(RoundHalf(sn) * u2);
      o1 = F2H(RoundHalf(cs) * u2);
    } else {
      const float x0 = XlaBitsToFloat(ba), x1 = XlaBitsToFloat(bb);
      const float u1 = fmaxf(x0, 1.0e-7f);
      const float v1 = static_cast<float>(2.0f * M_PI) * x1;
      const float u2 = sqrtf(-2.0f * gm::XlaLogF32(u1));
      float sn, cs;
      gm::GlibcSincosf<kGlibcFma>(v1, &sn, &cs);
      const float f0 = sn * u2, f1 = cs * u2;
      if constexpr (E == Elem::kF32) {
        o0 = f0;
        o1 = f1;
      } else {
        o0 = TruncBF(f0);
        o1 = TruncBF(f1);
      }
    }
    T* row0 = out + (p * s.d + 2 * h) * s.post;
    row0[q] = o0;
    if (2 * h + 1 < s.d) row0[s.post + q] = o1;
  }
}

__global__ void ThreeFryWordsKernel(uint64_t key, uint64_t start, int64_t n, uint32_t* out0,
                                    uint32_t* out1) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    ThreeFry(start + static_cast<uint64_t>(i), key, out0[i], out1[i]);
  }
}

template <Kind K, Elem E>
Status LaunchThreeFryElems(const LaunchArgs& a) {
  ThreeFryElementKernel<K, E>
      <<<GridFor(a.n), kThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(a);
  return Launched(a);
}

template <Elem E>
Status LaunchThreeFryNormal(const LaunchArgs& a) {
  const int64_t pairs = a.split.pre * a.split.h * a.split.post;
  ThreeFryNormalKernel<E><<<GridFor(pairs), kThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(a);
  return Launched(a);
}

template <Kind K>
Status LaunchThreeFryIntElem(const LaunchArgs& a) {
  switch (a.elem) {
    case Elem::kI32:
      return LaunchThreeFryElems<K, Elem::kI32>(a);
    case Elem::kU32:
      return LaunchThreeFryElems<K, Elem::kU32>(a);
    case Elem::kI64:
      return LaunchThreeFryElems<K, Elem::kI64>(a);
    case Elem::kU64:
      return LaunchThreeFryElems<K, Elem::kU64>(a);
    default:
      return InternalError(std::string(a.op) + ": no GPU ThreeFry kernel for this dtype");
  }
}

}  // namespace

Status LaunchThreeFry(const LaunchArgs& a) {
  if (a.n <= 0) return Status::OK();
  switch (a.kind) {
    case Kind::kUniform:
      switch (a.elem) {
        case Elem::kF32:
          return LaunchThreeFryElems<Kind::kUniform, Elem::kF32>(a);
        case Elem::kF64:
          return LaunchThreeFryElems<Kind::kUniform, Elem::kF64>(a);
        case Elem::kF16:
          return LaunchThreeFryElems<Kind::kUniform, Elem::kF16>(a);
        case Elem::kBF16:
          return LaunchThreeFryElems<Kind::kUniform, Elem::kBF16>(a);
        default:
          break;
      }
      break;
    case Kind::kNormal:
      switch (a.elem) {
        case Elem::kF32:
          return LaunchThreeFryNormal<Elem::kF32>(a);
        case Elem::kF16:
          return LaunchThreeFryNormal<Elem::kF16>(a);
        case Elem::kBF16:
          return LaunchThreeFryNormal<Elem::kBF16>(a);
        default:
          break;
      }
      break;
    case Kind::kTruncatedNormal:
      switch (a.elem) {
        case Elem::kF32:
          return LaunchThreeFryElems<Kind::kTruncatedNormal, Elem::kF32>(a);
        case Elem::kF16:
          return LaunchThreeFryElems<Kind::kTruncatedNormal, Elem::kF16>(a);
        case Elem::kBF16:
          return LaunchThreeFryElems<Kind::kTruncatedNormal, Elem::kBF16>(a);
        default:
          break;
      }
      break;
    case Kind::kUniformInt:
      return LaunchThreeFryIntElem<Kind::kUniformInt>(a);
    case Kind::kUniformFullInt:
      return LaunchThreeFryIntElem<Kind::kUniformFullInt>(a);
  }
  return InternalError(std::string(a.op) + ": no GPU ThreeFry kernel for this dtype");
}

Status LaunchThreeFryWords(int device, void* stream, uint64_t key, uint64_t start, int64_t n,
                           uint32_t* out0, uint32_t* out1) {
  if (n <= 0) return Status::OK();
  ThreeFryWordsKernel<<<GridFor(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(key, start, n,
                                                                                      out0, out1);
  LaunchArgs a;
  a.device = device;
  a.op = "ThreeFryWords";
  return Launched(a);
}

}  // namespace troupe::random::gpu::detail
