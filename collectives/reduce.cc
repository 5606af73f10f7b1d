#include "collectives/reduce.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/dtype_traits.h"

namespace troupe {
namespace {

// Elements per block: the running result of one block stays in L1 while the sources stream by.
constexpr int64_t kBlockBytes = 8192;

template <typename T>
constexpr bool kIsLowPrecision = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <typename T>
inline T AddOne(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else if constexpr (kIsLowPrecision<T>) {
    return T(static_cast<float>(a) + static_cast<float>(b));
  } else {
    return a + b;
  }
}

// Comparison value: 16-bit floats compare as float, everything else as itself.
template <typename T>
inline auto Key(T x) {
  if constexpr (kIsLowPrecision<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

template <typename T>
inline T MaxOne(T a, T b) {
  const auto fa = Key(a), fb = Key(b);
  return (fa > fb || fa != fa) ? a : b;  // a NaN on either side wins
}

template <typename T>
inline T MinOne(T a, T b) {
  const auto fa = Key(a), fb = Key(b);
  return (fa < fb || fa != fa) ? a : b;
}

template <typename T>
inline T DivOne(T a, int64_t n) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(a / static_cast<T>(n));
  } else if constexpr (kIsLowPrecision<T>) {
    return T(static_cast<float>(a) / static_cast<float>(n));
  } else {
    return a / static_cast<T>(n);
  }
}

#if defined(__AVX2__) && defined(__F16C__)
// 8-wide sums of 16-bit floats, bit-identical to the scalar path: half uses the same F16C
// conversions Eigen uses (round to nearest even, NaNs quieted), bfloat16 Eigen's rounding
// (x + 0x7fff + lsb) >> 16 with NaNs squashed to 0x7fc0 | sign.
inline int64_t AddHalf8(uint16_t* acc, const uint16_t* src, int64_t m) {
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + i),
                     _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

inline __m256 Bf16ToFloat(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

inline int64_t AddBf16x8(uint16_t* acc, const uint16_t* src, int64_t m) {
  int64_t i = 0;
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i sign_mask = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i qnan = _mm256_set1_epi32(0x7fc00000);
  for (; i + 8 <= m; i += 8) {
    const __m256 sum = _mm256_add_ps(Bf16ToFloat(acc + i), Bf16ToFloat(src + i));
    const __m256i bits = _mm256_castps_si256(sum);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
    __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(bias, lsb));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(sum, sum, _CMP_UNORD_Q));
    const __m256i nan_bits = _mm256_or_si256(qnan, _mm256_and_si256(bits, sign_mask));
    rounded = _mm256_blendv_epi8(rounded, nan_bits, nan);
    const __m256i hi = _mm256_srli_epi32(rounded, 16);
    // Pack 8 x 32-bit (values < 65536) to 8 x 16-bit, fixing packus' lane interleave.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(hi, hi), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + i), _mm256_castsi256_si128(packed));
  }
  return i;
}
#endif

// float and double max/min written as selects so the compiler vectorises them.
template <typename T, ReduceOp kOp>
inline void CombineBlock(T* __restrict acc, const T* __restrict src, int64_t m) {
  if constexpr (kOp == ReduceOp::kSum || kOp == ReduceOp::kMean) {
#if defined(__AVX2__) && defined(__F16C__)
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
      auto* a = reinterpret_cast<uint16_t*>(acc);
      const auto* b = reinterpret_cast<const uint16_t*>(src);
      const int64_t done = std::is_same_v<T, half> ? AddHalf8(a, b, m) : AddBf16x8(a, b, m);
      for (int64_t i = done; i < m; ++i) acc[i] = AddOne(acc[i], src[i]);
      return;
    }
#endif
    for (int64_t i = 0; i < m; ++i) acc[i] = AddOne(acc[i], src[i]);
  } else if constexpr (kOp == ReduceOp::kMax) {
    for (int64_t i = 0; i < m; ++i) acc[i] = MaxOne(acc[i], src[i]);
  } else {
    for (int64_t i = 0; i < m; ++i) acc[i] = MinOne(acc[i], src[i]);
  }
}

template <typename T, ReduceOp kOp>
void FoldTyped(const void* const* srcs, int num_srcs, void* const* dsts, int num_dsts, int64_t n,
               int64_t mean_divisor) {
  constexpr int64_t kBlock = kBlockBytes / static_cast<int64_t>(sizeof(T));
  alignas(64) T acc[kBlock];
  const bool divide = kOp == ReduceOp::kMean && mean_divisor > 1;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t m = std::min(kBlock, n - begin);
    std::memcpy(acc, static_cast<const T*>(srcs[0]) + begin, static_cast<size_t>(m) * sizeof(T));
    for (int s = 1; s < num_srcs; ++s) {
      CombineBlock<T, kOp>(acc, static_cast<const T*>(srcs[s]) + begin, m);
    }
    if (divide) {
      for (int64_t i = 0; i < m; ++i) acc[i] = DivOne(acc[i], mean_divisor);
    }
    for (int d = 0; d < num_dsts; ++d) {
      std::memcpy(static_cast<T*>(dsts[d]) + begin, acc, static_cast<size_t>(m) * sizeof(T));
    }
  }
}

// out[i] = a[i] + b[i], divided by `divisor` when it is not 1: the same IEEE operations as
// AddOne and DivOne, 256 bits at a time where AVX2 is on (-O2 leaves the scalar loops scalar).
// out may alias a or b element for element.
template <typename T>
inline void AddBlock(T* out, const T* a, const T* b, int64_t m, T divisor) {
  int64_t i = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m256 d = _mm256_set1_ps(divisor);
    for (; i + 8 <= m; i += 8) {
      __m256 x = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
      if (divisor != 1) x = _mm256_div_ps(x, d);
      _mm256_storeu_ps(out + i, x);
    }
  } else {
    const __m256d d = _mm256_set1_pd(divisor);
    for (; i + 4 <= m; i += 4) {
      __m256d x = _mm256_add_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i));
      if (divisor != 1) x = _mm256_div_pd(x, d);
      _mm256_storeu_pd(out + i, x);
    }
  }
#endif
  for (; i < m; ++i) out[i] = divisor != 1 ? (a[i] + b[i]) / divisor : a[i] + b[i];
}

// float/double sums and means of two or more sources: the first step reads two sources, the
// last writes the first destination directly (two sources, one destination: one pass), the
// other destinations copy it. Bits as FoldTyped's: left to right, rounded after every step.
template <typename T, ReduceOp kOp>
void FoldSumDirect(const void* const* srcs, int num_srcs, void* const* dsts, int num_dsts,
                   int64_t n, int64_t mean_divisor) {
  constexpr int64_t kBlock = kBlockBytes / static_cast<int64_t>(sizeof(T));
  alignas(64) T acc[kBlock];
  const T divisor = kOp == ReduceOp::kMean && mean_divisor > 1 ? static_cast<T>(mean_divisor) : 1;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t m = std::min(kBlock, n - begin);
    T* first = static_cast<T*>(dsts[0]) + begin;
    const T* partial = static_cast<const T*>(srcs[0]) + begin;
    for (int s = 1; s < num_srcs; ++s) {
      const bool last = s + 1 == num_srcs;
      // Every source's block is read before the first destination's block is written.
      T* out = last ? first : acc;
      AddBlock(out, partial, static_cast<const T*>(srcs[s]) + begin, m, last ? divisor : T(1));
      partial = out;
    }
    for (int d = 1; d < num_dsts; ++d) {
      std::memcpy(static_cast<T*>(dsts[d]) + begin, first, static_cast<size_t>(m) * sizeof(T));
    }
  }
}

template <typename T>
void FoldForOp(ReduceOp op, const void* const* srcs, int num_srcs, void* const* dsts, int num_dsts,
               int64_t n, int64_t mean_divisor) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (num_srcs >= 2 && op == ReduceOp::kSum) {
      return FoldSumDirect<T, ReduceOp::kSum>(srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    }
    if (num_srcs >= 2 && op == ReduceOp::kMean) {
      return FoldSumDirect<T, ReduceOp::kMean>(srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    }
  }
  switch (op) {
    case ReduceOp::kSum:
      return FoldTyped<T, ReduceOp::kSum>(srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case ReduceOp::kMean:
      return FoldTyped<T, ReduceOp::kMean>(srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case ReduceOp::kMax:
      return FoldTyped<T, ReduceOp::kMax>(srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case ReduceOp::kMin:
      return FoldTyped<T, ReduceOp::kMin>(srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
  }
}

}  // namespace

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMean:
      return "mean";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "unknown";
}

bool IsCollectiveDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kBFloat16:
    case DType::kHalf:
    case DType::kInt32:
    case DType::kInt64:
      return true;
    default:
      return false;
  }
}

Status CheckCollectiveDType(DType dtype, std::string_view what) {
  if (IsCollectiveDType(dtype)) return Status::OK();
  return InvalidArgumentError(std::string(what) + ": dtype " + std::string(DTypeName(dtype)) +
                              " is not supported by collectives; use float32, float64, "
                              "bfloat16, half, int32 or int64");
}

void FoldElements(DType dtype, ReduceOp op, const void* const* srcs, int num_srcs,
                  void* const* dsts, int num_dsts, int64_t n, int64_t mean_divisor) {
  if (n <= 0 || num_srcs <= 0 || num_dsts <= 0) return;
  switch (dtype) {
    case DType::kFloat32:
      return FoldForOp<float>(op, srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case DType::kFloat64:
      return FoldForOp<double>(op, srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case DType::kBFloat16:
      return FoldForOp<bfloat16>(op, srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case DType::kHalf:
      return FoldForOp<half>(op, srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case DType::kInt32:
      return FoldForOp<int32_t>(op, srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    case DType::kInt64:
      return FoldForOp<int64_t>(op, srcs, num_srcs, dsts, num_dsts, n, mean_divisor);
    default:
      return;  // callers validate dtypes first
  }
}

void DivideElements(DType dtype, void* data, int64_t n, int64_t divisor) {
  if (divisor <= 1) return;
  VisitNumericDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      return;
    } else {
      T* p = static_cast<T*>(data);
      for (int64_t i = 0; i < n; ++i) p[i] = DivOne(p[i], divisor);
    }
  });
}

}  // namespace troupe
