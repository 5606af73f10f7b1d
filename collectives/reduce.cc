#include "collectives/reduce.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

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

// float and double max/min written as selects so the compiler vectorises them.
template <typename T, ReduceOp kOp>
inline void CombineBlock(T* __restrict acc, const T* __restrict src, int64_t m) {
  if constexpr (kOp == ReduceOp::kSum || kOp == ReduceOp::kMean) {
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

template <typename T>
void FoldForOp(ReduceOp op, const void* const* srcs, int num_srcs, void* const* dsts, int num_dsts,
               int64_t n, int64_t mean_divisor) {
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
