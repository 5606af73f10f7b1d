// ThreeFry under XLA's layout. Bits are generated per "row" of the half shape, so each ThreeFry
// input lands directly in its two output positions; floats and normals are computed from those
// bits exactly as XLA CPU's compiled code does (see xla_threefry.h).
#include "kernels/random/xla_threefry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/random/threefry.h"
#include "kernels/random/xla_cpu_math.h"

namespace troupe::random::xla {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

}  // namespace

Split SplitShapeIntoHalves(const std::vector<int64_t>& dims) {
  Split s;
  if (dims.empty()) {  // a scalar is treated as [1]
    return s;
  }
  int sd = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] % 2 == 0) {
      sd = static_cast<int>(i);
      break;
    }
  }
  if (sd == -1) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (sd == -1 || dims[i] > dims[static_cast<size_t>(sd)]) sd = static_cast<int>(i);
    }
  }
  s.dim = sd;
  s.pre = Product(dims, 0, static_cast<size_t>(sd));
  s.d = dims[static_cast<size_t>(sd)];
  s.h = (s.d + 1) / 2;
  s.post = Product(dims, static_cast<size_t>(sd) + 1, dims.size());
  return s;
}

namespace {

template <typename Fn>
void Parallel(int64_t n, int64_t min_grain, ThreadPool* pool, const Fn& fn) {
  if (pool == nullptr || n <= min_grain) {
    if (n > 0) fn(0, n);
    return;
  }
  const int64_t tasks = 4 * (pool->num_threads() + 1);
  pool->ParallelFor(n, std::max(min_grain, (n + tasks - 1) / tasks), fn);
}

float BitsToFloat(uint32_t b) {
  return static_cast<float>(b >> 9) * 1.1920928955078125e-7f;  // 2^-23
}
double BitsToDouble(uint64_t b) {
  return static_cast<double>(b >> 12) * 2.220446049250313080847263336181640625e-16;  // 2^-52
}
half BitsToHalf(uint32_t b) {
  const uint16_t v = static_cast<uint16_t>((b & 0x3ffu) | (15u << 10));
  return half(static_cast<float>(Eigen::numext::bit_cast<half>(v)) - 1.0f);
}

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The float32 -> output conversion of XLA's random ops: bfloat16 results are computed in float32
// and TRUNCATED (tf2xla's MaybeConvertF32ToBF16 masks the low 16 bits), not rounded.
template <typename T, typename F>
T Narrow(F v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return Eigen::numext::bit_cast<bfloat16>(static_cast<uint16_t>(FloatBits(v) >> 16));
  } else {
    return static_cast<T>(v);
  }
}

// XLA's Box-Muller on one pair of uniform floats (x0 -> sin output, x1 -> cos output).
inline void BoxMullerF32(float x0, float x1, float* o0, float* o1) {
  const float u1 = std::max(x0, 1.0e-7f);
  const float v1 = static_cast<float>(2.0f * M_PI) * x1;
  const float u2 = std::sqrt(-2.0f * XlaLogF32(u1));
  *o0 = ::sinf(v1) * u2;
  *o1 = ::cosf(v1) * u2;
}

inline void BoxMullerF64(double x0, double x1, double* o0, double* o1) {
  const double u1 = std::max(x0, static_cast<double>(1.0e-7f));
  const double v1 = static_cast<double>(2.0f * M_PI) * x1;
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  *o0 = std::sin(v1) * u2;
  *o1 = std::cos(v1) * u2;
}

}  // namespace

void ThreeFryBits32(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, uint32_t* out,
                    ThreadPool* pool) {
  if (dims.empty()) {
    out[0] = ThreeFry2x32::Compute64(counter, key)[0];
    return;
  }
  const Split s = SplitShapeIntoHalves(dims);
  if (s.pre * s.d * s.post == 0) return;
  // Rows of the half shape: row r = (p, h) holds `post` inputs starting at counter + r * post.
  const int64_t rows = s.pre * s.h;
  const int64_t rows_per_chunk = std::max<int64_t>(1, 4096 / s.post);
  Parallel(rows, std::max<int64_t>(rows_per_chunk, 65536 / s.post), pool,
           [&](int64_t r0, int64_t r1) {
             std::vector<uint32_t> x0(static_cast<size_t>(rows_per_chunk * s.post));
             std::vector<uint32_t> x1(x0.size());
             for (int64_t cr = r0; cr < r1; cr += rows_per_chunk) {
               const int64_t nr = std::min(rows_per_chunk, r1 - cr);
               ThreeFryWords(key, counter + static_cast<uint64_t>(cr * s.post), nr * s.post,
                             x0.data(), x1.data());
               for (int64_t r = cr; r < cr + nr; ++r) {
                 const int64_t p = r / s.h, h = r % s.h;
                 const uint32_t* a = x0.data() + (r - cr) * s.post;
                 const uint32_t* b = x1.data() + (r - cr) * s.post;
                 uint32_t* row0 = out + (p * s.d + 2 * h) * s.post;
                 std::memcpy(row0, a, static_cast<size_t>(s.post) * 4);
                 if (2 * h + 1 < s.d)
                   std::memcpy(row0 + s.post, b, static_cast<size_t>(s.post) * 4);
               }
             }
           });
}

void ThreeFryBits64(uint64_t key, uint64_t counter, int64_t n, uint64_t* out, ThreadPool* pool) {
  Parallel(n, 65536, pool, [&](int64_t i0, int64_t i1) {
    constexpr int64_t kChunk = 4096;
    uint32_t x0[kChunk], x1[kChunk];
    for (int64_t c = i0; c < i1; c += kChunk) {
      const int64_t m = std::min(kChunk, i1 - c);
      ThreeFryWords(key, counter + static_cast<uint64_t>(c), m, x0, x1);
      for (int64_t i = 0; i < m; ++i) out[c + i] = uint64_t{x0[i]} | (uint64_t{x1[i]} << 32);
    }
  });
}

namespace {

int64_t NumElements(const std::vector<int64_t>& dims) { return Product(dims, 0, dims.size()); }

std::vector<uint32_t> Bits32(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                             ThreadPool* pool) {
  std::vector<uint32_t> bits(static_cast<size_t>(NumElements(dims)));
  ThreeFryBits32(key, counter, dims, bits.data(), pool);
  return bits;
}

// The shape XLA draws a normal's uniforms for: the split dim becomes (h, 2).
std::vector<int64_t> ConcatDims(const std::vector<int64_t>& dims, const Split& s) {
  if (dims.empty()) return {2};
  std::vector<int64_t> c;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<int>(i) == s.dim) {
      c.push_back(s.h);
      c.push_back(2);
    } else {
      c.push_back(dims[i]);
    }
  }
  return c;
}

// Runs Box-Muller over the pairs of a concat-shaped uniform array and writes the outputs back
// in the requested shape: output (p, 2h + c, q) comes from pair (p, h, q).
template <typename F, typename T, typename BoxMuller>
void PairUp(const std::vector<F>& u, const Split& s, bool scalar, T* out, ThreadPool* pool,
            BoxMuller box_muller) {
  if (scalar) {
    F o0, o1;
    box_muller(u[0], u[1], &o0, &o1);
    out[0] = Narrow<T>(o0);
    return;
  }
  Parallel(s.pre * s.h, std::max<int64_t>(1, 16384 / s.post), pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / s.h, h = r % s.h;
      const F* a = u.data() + (r * 2) * s.post;
      const F* b = a + s.post;
      T* row0 = out + (p * s.d + 2 * h) * s.post;
      const bool has_second = 2 * h + 1 < s.d;
      for (int64_t q = 0; q < s.post; ++q) {
        F o0, o1;
        box_muller(a[q], b[q], &o0, &o1);
        row0[q] = Narrow<T>(o0);
        if (has_second) row0[s.post + q] = Narrow<T>(o1);
      }
    }
  });
}

}  // namespace

template <typename T>
void ThreeFryUniform(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T* out,
                     ThreadPool* pool) {
  const int64_t n = NumElements(dims);
  if constexpr (std::is_same_v<T, double>) {
    std::vector<uint64_t> bits(static_cast<size_t>(n));
    ThreeFryBits64(key, counter, n, bits.data(), pool);
    for (int64_t i = 0; i < n; ++i) out[i] = BitsToDouble(bits[static_cast<size_t>(i)]);
  } else {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t b = bits[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<T, float>) {
        out[i] = BitsToFloat(b);
      } else if constexpr (std::is_same_v<T, half>) {
        out[i] = BitsToHalf(b);
      } else {
        static_assert(std::is_same_v<T, bfloat16>);
        out[i] = Narrow<bfloat16>(BitsToFloat(b));  // drawn as float32, then truncated
      }
    }
  }
}

template <typename T>
void ThreeFryNormal(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T* out,
                    ThreadPool* pool) {
  if (NumElements(dims) == 0) return;
  const Split s = SplitShapeIntoHalves(dims);
  const std::vector<int64_t> concat = ConcatDims(dims, s);
  if constexpr (std::is_same_v<T, double>) {
    const int64_t m = NumElements(concat);
    std::vector<uint64_t> bits(static_cast<size_t>(m));
    ThreeFryBits64(key, counter, m, bits.data(), pool);
    std::vector<double> u(bits.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = BitsToDouble(bits[i]);
    PairUp(u, s, dims.empty(), out, pool, BoxMullerF64);
  } else if constexpr (std::is_same_v<T, half>) {
    // XLA runs the half Box-Muller with half uniforms; the math is done in float and rounded
    // after every op (XLA CPU's float normalization of f16).
    const std::vector<uint32_t> bits = Bits32(key, counter, concat, pool);
    std::vector<half> u(bits.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = BitsToHalf(bits[i]);
    PairUp(u, s, dims.empty(), out, pool, [](half x0, half x1, half* o0, half* o1) {
      const half u1 = std::max(x0, half(1.0e-7f));
      const half v1 =
          half(static_cast<float>(half(static_cast<float>(2.0f * M_PI))) * static_cast<float>(x1));
      const half lg = half(XlaLogF32(static_cast<float>(u1)));
      const half u2 = half(std::sqrt(static_cast<float>(half(-2.0f * static_cast<float>(lg)))));
      *o0 = half(static_cast<float>(half(::sinf(static_cast<float>(v1)))) * static_cast<float>(u2));
      *o1 = half(static_cast<float>(half(::cosf(static_cast<float>(v1)))) * static_cast<float>(u2));
    });
  } else {
    // float32, and bfloat16 which XLA computes in float32 and rounds at the end.
    const std::vector<uint32_t> bits = Bits32(key, counter, concat, pool);
    std::vector<float> u(bits.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = BitsToFloat(bits[i]);
    PairUp(u, s, dims.empty(), out, pool, BoxMullerF32);
  }
}

template <typename T>
void ThreeFryTruncatedNormal(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                             T* out, ThreadPool* pool) {
  const int64_t n = NumElements(dims);
  // The uniforms are drawn in [smallest normal, 1): value * (1 - tiny) + tiny, where 1 - tiny
  // rounds to 1, so XLA folds it to value + tiny.
  if constexpr (std::is_same_v<T, double>) {
    std::vector<uint64_t> bits(static_cast<size_t>(n));
    ThreeFryBits64(key, counter, n, bits.data(), pool);
    constexpr double kTiny = std::numeric_limits<double>::min();
    for (int64_t i = 0; i < n; ++i)
      out[i] = XlaTruncatedNormalF64(BitsToDouble(bits[static_cast<size_t>(i)]) + kTiny);
  } else if constexpr (std::is_same_v<T, half>) {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    for (int64_t i = 0; i < n; ++i)
      out[i] = XlaTruncatedNormalF16(BitsToHalf(bits[static_cast<size_t>(i)]));
  } else {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    constexpr float kTiny = std::numeric_limits<float>::min();
    for (int64_t i = 0; i < n; ++i) {
      out[i] = Narrow<T>(XlaTruncatedNormalF32(BitsToFloat(bits[static_cast<size_t>(i)]) + kTiny));
    }
  }
}

template <typename T>
void ThreeFryUniformInt(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T lo,
                        T hi, T* out, ThreadPool* pool) {
  using U = std::make_unsigned_t<T>;
  const U range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  const int64_t n = NumElements(dims);
  auto finish = [&](U bits) -> T {
    const U dist = bits % range;
    const U half_dist = dist >> 1;
    return static_cast<T>(static_cast<U>(lo) + half_dist + (dist - half_dist));
  };
  if constexpr (sizeof(T) == 8) {
    std::vector<uint64_t> bits(static_cast<size_t>(n));
    ThreeFryBits64(key, counter, n, bits.data(), pool);
    for (int64_t i = 0; i < n; ++i) out[i] = finish(bits[static_cast<size_t>(i)]);
  } else {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    for (int64_t i = 0; i < n; ++i) out[i] = finish(bits[static_cast<size_t>(i)]);
  }
}

template <typename T>
void ThreeFryUniformFullInt(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                            T* out, ThreadPool* pool) {
  const int64_t n = NumElements(dims);
  if constexpr (sizeof(T) == 8) {
    ThreeFryBits64(key, counter, n, reinterpret_cast<uint64_t*>(out), pool);
  } else {
    ThreeFryBits32(key, counter, dims, reinterpret_cast<uint32_t*>(out), pool);
  }
}

#define TROUPE_INSTANTIATE_FLOAT(T)                                                             \
  template void ThreeFryUniform<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*,         \
                                   ThreadPool*);                                                \
  template void ThreeFryNormal<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*,          \
                                  ThreadPool*);                                                 \
  template void ThreeFryTruncatedNormal<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*, \
                                           ThreadPool*);
TROUPE_INSTANTIATE_FLOAT(float)
TROUPE_INSTANTIATE_FLOAT(double)
TROUPE_INSTANTIATE_FLOAT(half)
TROUPE_INSTANTIATE_FLOAT(bfloat16)
#undef TROUPE_INSTANTIATE_FLOAT

#define TROUPE_INSTANTIATE_INT(T)                                                                \
  template void ThreeFryUniformInt<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T, T, T*, \
                                      ThreadPool*);                                              \
  template void ThreeFryUniformFullInt<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*,   \
                                          ThreadPool*);
TROUPE_INSTANTIATE_INT(int32_t)
TROUPE_INSTANTIATE_INT(int64_t)
TROUPE_INSTANTIATE_INT(uint32_t)
TROUPE_INSTANTIATE_INT(uint64_t)
#undef TROUPE_INSTANTIATE_INT

}  // namespace troupe::random::xla
