// Internal: portable SIMD vectors (GCC/Clang vector extensions) for hand-written CPU kernels,
// and run-time selection of an AVX-512 variant on x86-64 hosts that have it (the default build
// targets x86-64-v3, so AVX-512 code lives in functions marked TROUPE_TARGET_AVX512 and is only
// called when CpuHasAvx512()).
//
// Kernels are written once as templates over the vector width in bytes (kBytes), marked
// TROUPE_ALWAYS_INLINE, and instantiated from two thin entry points: one plain (32-byte
// vectors) and one TROUPE_TARGET_AVX512 (64-byte vectors). Kernels keep every output element's
// sum in the same order whatever the width, so both variants give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe {
namespace kernels {
namespace simd {

#define TROUPE_ALWAYS_INLINE inline __attribute__((always_inline))

// False when TROUPE_CPU_AVX512=0 is set.
bool AllowAvx512();

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TROUPE_HAVE_AVX512_DISPATCH 1
#define TROUPE_TARGET_AVX512 \
  __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,bmi2")))
// True when the CPU (and OS) can run TROUPE_TARGET_AVX512 code.
// TROUPE_CPU_AVX512=0 in the environment turns the AVX-512 variants off (for comparisons).
inline bool CpuHasAvx512() {
  static const bool has = AllowAvx512() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
  return has;
}
#else
#define TROUPE_HAVE_AVX512_DISPATCH 0
#define TROUPE_TARGET_AVX512
inline bool CpuHasAvx512() { return false; }
#endif

// Vec<T, kBytes>: kBytes / sizeof(T) lanes of T.
template <typename T, int kBytes>
struct VecOf {
  typedef T type __attribute__((vector_size(kBytes)));
};
template <typename T, int kBytes>
using Vec = typename VecOf<T, kBytes>::type;

// The helpers are always inlined, so passing 64-byte vectors by value never crosses an ABI
// boundary; GCC warns about it anyway.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <typename V, typename T>
TROUPE_ALWAYS_INLINE V Load(const T* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V, typename T>
TROUPE_ALWAYS_INLINE void Store(T* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof(V));
}
template <typename V, typename T>
TROUPE_ALWAYS_INLINE V Splat(T s) {
  return V{} + s;
}
#pragma GCC diagnostic pop

template <typename T, int kBytes>
constexpr int64_t kLanes = kBytes / static_cast<int64_t>(sizeof(T));

inline int64_t RoundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// n floats of v (grown as needed) from its first 64-byte boundary, so that the vector rows of a
// scratch buffer never straddle two cache lines.
inline float* Aligned64(std::vector<float>& v, int64_t n) {
  const size_t need = static_cast<size_t>(n) + 16;
  if (v.size() < need) v.resize(need);
  const auto addr = reinterpret_cast<uintptr_t>(v.data());
  return v.data() + (64 - addr % 64) % 64 / sizeof(float);
}

}  // namespace simd
}  // namespace kernels
}  // namespace troupe
