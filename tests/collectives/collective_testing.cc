#include "tests/collectives/collective_testing.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "core/dtype_traits.h"

namespace troupe::testing {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
T ValueAt(uint64_t seed, int replica, int64_t i) {
  const uint64_t h = Mix(seed * 1000003u + static_cast<uint64_t>(replica) * 7919u + Mix(i));
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int64_t>(h % 2001) - 1000);
  } else {
    // Mantissa in [-1, 1) scaled by 2^e, e in [-12, 12]: sums of these round differently
    // depending on order.
    const double m = static_cast<double>(h >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    const int e = static_cast<int>((h >> 3) % 25) - 12;
    return T(static_cast<float>(std::ldexp(m, e)));
  }
}

template <typename T>
double ToDouble(T x) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return static_cast<double>(static_cast<float>(x));
  } else {
    return static_cast<double>(x);
  }
}

template <typename T>
T Combine(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (op == ReduceOp::kMax) return a > b ? a : b;
    if (op == ReduceOp::kMin) return a < b ? a : b;
    return static_cast<T>(a + b);
  } else {
    // Ties (+0 vs -0) keep the later operand, NaN wins: the documented semantics.
    const double fa = ToDouble(a), fb = ToDouble(b);
    if (op == ReduceOp::kMax) return (fa > fb || std::isnan(fa)) ? a : b;
    if (op == ReduceOp::kMin) return (fa < fb || std::isnan(fa)) ? a : b;
    return static_cast<T>(a + b);  // Eigen half/bfloat16 round after each add
  }
}

template <typename Fn>
void Visit(DType dtype, Fn&& fn) {
  VisitNumericDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                  std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                  std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
      fn(zero);
    }
  });
}

}  // namespace

const std::vector<DType>& CollectiveDTypes() {
  static const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat64, DType::kBFloat16,
                                            DType::kHalf,    DType::kInt32,   DType::kInt64};
  return dtypes;
}

Tensor MakeReplicaInput(DType dtype, const TensorShape& shape, int replica, uint64_t seed) {
  Tensor t = *Tensor::Allocate(dtype, shape);
  Visit(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = ValueAt<T>(seed, replica, i);
  });
  return t;
}

std::vector<Tensor> ReplicaInputs(DType dtype, const TensorShape& shape, int n, uint64_t seed) {
  std::vector<Tensor> v;
  for (int r = 0; r < n; ++r) v.push_back(MakeReplicaInput(dtype, shape, r, seed));
  return v;
}

Tensor FoldReference(const std::vector<Tensor>& inputs, ReduceOp op) {
  const DType dtype = inputs[0].dtype();
  const int n = static_cast<int>(inputs.size());
  Tensor out = *Tensor::Allocate(dtype, inputs[0].shape());
  Visit(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = out.data<T>();
    std::vector<const T*> in;
    for (const Tensor& t : inputs) in.push_back(t.data<T>());
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      T acc = in[0][i];
      for (int r = 1; r < n; ++r) acc = Combine(op, acc, in[r][i]);
      if (op == ReduceOp::kMean) {
        if constexpr (std::is_integral_v<T>) {
          acc = static_cast<T>(acc / static_cast<T>(n));
        } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
          acc = T(static_cast<float>(acc) / static_cast<float>(n));
        } else {
          acc = acc / static_cast<T>(n);
        }
      }
      p[i] = acc;
    }
  });
  return out;
}

Tensor ConcatReference(const std::vector<Tensor>& inputs) {
  const int n = static_cast<int>(inputs.size());
  const TensorShape& shape = inputs[0].shape();
  TensorShape out_shape = shape;
  if (shape.rank() == 0) {
    out_shape = TensorShape{n};
  } else {
    out_shape.set_dim(0, shape.dim(0) * n);
  }
  Tensor out = *Tensor::Allocate(inputs[0].dtype(), out_shape);
  const size_t bytes = inputs[0].byte_size();
  for (int r = 0; r < n; ++r) {
    if (bytes)
      std::memcpy(static_cast<char*>(out.raw_data()) + r * bytes, inputs[r].raw_data(), bytes);
  }
  return out;
}

std::string ApproxDiff(const Tensor& got, const std::vector<Tensor>& inputs, ReduceOp op) {
  const int n = static_cast<int>(inputs.size());
  std::string diff;
  Visit(got.dtype(), [&](auto zero) {
    using T = decltype(zero);
    double eps = 1.2e-7;
    if constexpr (std::is_same_v<T, double>) eps = 2.3e-16;
    if constexpr (std::is_same_v<T, half>) eps = 1e-3;
    if constexpr (std::is_same_v<T, bfloat16>) eps = 8e-3;
    if constexpr (std::is_integral_v<T>) eps = 0;
    const T* g = got.data<T>();
    for (int64_t i = 0; i < got.num_elements() && diff.empty(); ++i) {
      double sum = 0, abs_sum = 0;
      for (const Tensor& t : inputs) {
        const double x = ToDouble(t.data<T>()[i]);
        sum += x;
        abs_sum += std::fabs(x);
      }
      double want = sum;
      if (op == ReduceOp::kMean) {
        want = sum / n;
        abs_sum /= n;
      }
      const double have = ToDouble(g[i]);
      if (std::fabs(have - want) > (n + 1) * eps * abs_sum + 1e-30) {
        diff = "element " + std::to_string(i) + ": got " + std::to_string(have) + ", want ~" +
               std::to_string(want);
      }
    }
  });
  return diff;
}

Tensor ReferenceAllReduce(DType dtype, const TensorShape& shape, int n, ReduceOp op,
                          uint64_t seed) {
  return FoldReference(ReplicaInputs(dtype, shape, n, seed), op);
}

Tensor ReferenceReduceScatter(DType dtype, const TensorShape& shape, int n, int g, ReduceOp op,
                              uint64_t seed) {
  Tensor full = ReferenceAllReduce(dtype, shape, n, op, seed);
  const int64_t rows = shape.dim(0) / n;
  return full.Slice(g * rows, (g + 1) * rows)->DeepCopy();
}

Tensor ReferenceAllGather(DType dtype, const TensorShape& shape, int n, uint64_t seed) {
  return ConcatReference(ReplicaInputs(dtype, shape, n, seed));
}

std::string BitDiff(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return "got " + std::string(DTypeName(got.dtype())) + got.shape().ToString() + ", want " +
           std::string(DTypeName(want.dtype())) + want.shape().ToString();
  }
  const size_t esize = DTypeSize(got.dtype());
  const char* a = static_cast<const char*>(got.raw_data());
  const char* b = static_cast<const char*>(want.raw_data());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    if (std::memcmp(a + i * esize, b + i * esize, esize) != 0) {
      Tensor ga = *got.Reshape(TensorShape{got.num_elements()});
      Tensor wa = *want.Reshape(TensorShape{want.num_elements()});
      auto hex = [&](const char* p) {
        uint64_t bits = 0;
        std::memcpy(&bits, p, esize);
        char buf[24];
        std::snprintf(buf, sizeof(buf), " (0x%llx)", static_cast<unsigned long long>(bits));
        return std::string(buf);
      };
      return "element " + std::to_string(i) + " of " + std::to_string(got.num_elements()) +
             " differs: got " + ga.Slice(i, i + 1)->DebugString(1) + hex(a + i * esize) +
             ", want " + wa.Slice(i, i + 1)->DebugString(1) + hex(b + i * esize);
    }
  }
  return "";
}

}  // namespace troupe::testing
