// CUDA kernels for the counter-based random ops (see random_gpu.h). One thread per Philox call
// (fixed-cost distributions), per truncated-normal group, or per ThreeFry output element /
// Box-Muller pair; every thread derives its counter from its output position exactly as the CPU
// fill does, so the layout does not depend on the launch configuration.
//
// Compiled with -fmad=false: an a*b+c the compiler fused would change bits; the fused ones
// (XLA's, glibc's FMA build) are written as fma()/fmaf() in random_math.h.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/random_launch.h"
#include "kernels/cuda/random_math.h"

namespace troupe::random::gpu::detail {
namespace {

namespace gm = ::troupe::random::gpu_math;

// glibc's logf/sincosf: the FMA and baseline builds give the same floats on every argument
// Box-Muller passes (all 2^23 of each, checked by the host test), so either port works.
constexpr bool kGlibcFma = true;

// --- engines ----------------------------------------------------------------------------------

struct Block4 {
  uint32_t w[4];
};

__device__ __forceinline__ Block4 PhiloxCompute(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                                uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t lo0 = kM0 * c0, hi0 = __umulhi(kM0, c0);
    const uint32_t lo1 = kM1 * c2, hi1 = __umulhi(kM1, c2);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// 128-bit counter + 64-bit delta, full carry (random::PhiloxBlocks' AddToCounter).
__device__ __forceinline__ void AddToCounter(const uint32_t in[4], uint64_t delta, uint32_t c[4]) {
  const uint64_t lo = uint64_t{in[0]} | (uint64_t{in[1]} << 32);
  uint64_t hi = uint64_t{in[2]} | (uint64_t{in[3]} << 32);
  const uint64_t new_lo = lo + delta;
  if (new_lo < lo) ++hi;
  c[0] = static_cast<uint32_t>(new_lo);
  c[1] = static_cast<uint32_t>(new_lo >> 32);
  c[2] = static_cast<uint32_t>(hi);
  c[3] = static_cast<uint32_t>(hi >> 32);
}

// TF's PhiloxRandom::Skip, carry quirk included (Philox4x32::Skip).
__device__ __forceinline__ void Skip(uint32_t c[4], uint64_t count) {
  const uint32_t count_lo = static_cast<uint32_t>(count);
  uint32_t count_hi = static_cast<uint32_t>(count >> 32);
  c[0] += count_lo;
  if (c[0] < count_lo) ++count_hi;
  c[1] += count_hi;
  if (c[1] < count_hi) {
    if (++c[2] == 0) ++c[3];
  }
}

__device__ __forceinline__ void Increment(uint32_t c[4]) {
  if (++c[0] == 0 && ++c[1] == 0 && ++c[2] == 0) ++c[3];
}

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

int GridFor(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

Status Launched(const LaunchArgs& a) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return InternalError("gpu:" + std::to_string(a.device) + ": " + a.op +
                         ": kernel launch failed: " + cudaGetErrorString(err));
  }
  return Status::OK();
}

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
    uint32_t c[4];
    AddToCounter(base.counter, static_cast<uint64_t>(g), c);
    const Block4 b = PhiloxCompute(c[0], c[1], c[2], c[3], base.key[0], base.key[1]);
    T v[G];
    Conv()(b.w, v, lo, range);
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
    Skip(c, static_cast<uint64_t>(g) * (G * 256 / 4));
    Block4 block{};
    int used = 4;
    auto next = [&]() -> uint32_t {
      if (used == 4) {
        block = PhiloxCompute(c[0], c[1], c[2], c[3], base.key[0], base.key[1]);
        Increment(c);
        used = 0;
      }
      return block.w[used++];
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
    uint32_t c0[4], c[4];
    AddToCounter(base.counter, first, c0);
    AddToCounter(c0, static_cast<uint64_t>(i), c);
    const Block4 b = PhiloxCompute(c[0], c[1], c[2], c[3], base.key[0], base.key[1]);
    out[i] = make_uint4(b.w[0], b.w[1], b.w[2], b.w[3]);
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

// --- ThreeFry (XLA layout) ----------------------------------------------------------------------

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
// half after every op.
__device__ __forceinline__ float XlaTruncatedNormalHalf(float u, float alpha, float z) {
  const float p = RoundHalf(fmaf(z, u, alpha));
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

Status CopyToDevice(int device, void* stream, void* dst, const void* src, size_t bytes,
                    const char* op) {
  // Pageable source: cudaMemcpyAsync returns once the data is staged, so `src` may be freed.
  const cudaError_t err =
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) {
    return InternalError(std::string(op) +
                         ": host-to-device copy failed: " + cudaGetErrorString(err));
  }
  return Status::OK();
}

}  // namespace troupe::random::gpu::detail
