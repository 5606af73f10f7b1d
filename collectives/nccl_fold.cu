#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "collectives/nccl_fold.h"

namespace troupe::nccl {
namespace {

template <typename T>
__device__ __forceinline__ float ToF(T x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(x);
  } else {
    return __bfloat162float(x);
  }
}

template <typename T>
__device__ __forceinline__ T FromF(float x) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(x);
  } else {
    return __float2bfloat16_rn(x);
  }
}

template <typename T>
constexpr bool kLow = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Mirrors collectives/reduce.cc element by element.
template <typename T, int kOp>
__device__ __forceinline__ T Combine(T a, T b) {
  if constexpr (kOp == 0 || kOp == 1) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else if constexpr (kLow<T>) {
      return FromF<T>(__fadd_rn(ToF(a), ToF(b)));
    } else if constexpr (std::is_same_v<T, float>) {
      return __fadd_rn(a, b);
    } else {
      return __dadd_rn(a, b);
    }
  } else {
    if constexpr (std::is_integral_v<T>) {
      return kOp == 2 ? (a > b ? a : b) : (a < b ? a : b);
    } else {
      double fa, fb;  // exact for every floating type here
      if constexpr (kLow<T>) {
        fa = ToF(a);
        fb = ToF(b);
      } else {
        fa = static_cast<double>(a);
        fb = static_cast<double>(b);
      }
      const bool take_a = kOp == 2 ? (fa > fb || fa != fa) : (fa < fb || fa != fa);
      return take_a ? a : b;
    }
  }
}

template <typename T>
__device__ __forceinline__ T Divide(T a, long long n) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(a / static_cast<T>(n));
  } else if constexpr (kLow<T>) {
    return FromF<T>(__fdiv_rn(ToF(a), static_cast<float>(n)));
  } else if constexpr (std::is_same_v<T, float>) {
    return __fdiv_rn(a, static_cast<float>(n));
  } else {
    return __ddiv_rn(a, static_cast<double>(n));
  }
}

template <typename T, int kOp>
__global__ void FoldKernel(const T* slots, long long stride, const int* order, int n,
                           long long count, T* out, long long divisor) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    T acc = slots[order[0] * stride + i];
    for (int k = 1; k < n; ++k) acc = Combine<T, kOp>(acc, slots[order[k] * stride + i]);
    if (kOp == 1 && divisor > 1) acc = Divide(acc, divisor);
    out[i] = acc;
  }
}

template <typename T>
void Launch(ReduceOp op, const void* slots, int64_t stride, const int* order, int n, int64_t count,
            void* out, int64_t divisor, cudaStream_t stream) {
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((count + threads - 1) / threads, 4096));
  const T* s = static_cast<const T*>(slots);
  T* o = static_cast<T*>(out);
  switch (op) {
    case ReduceOp::kSum:
      FoldKernel<T, 0><<<blocks, threads, 0, stream>>>(s, stride, order, n, count, o, divisor);
      break;
    case ReduceOp::kMean:
      FoldKernel<T, 1><<<blocks, threads, 0, stream>>>(s, stride, order, n, count, o, divisor);
      break;
    case ReduceOp::kMax:
      FoldKernel<T, 2><<<blocks, threads, 0, stream>>>(s, stride, order, n, count, o, divisor);
      break;
    case ReduceOp::kMin:
      FoldKernel<T, 3><<<blocks, threads, 0, stream>>>(s, stride, order, n, count, o, divisor);
      break;
  }
}

}  // namespace

void LaunchFold(DType dtype, ReduceOp op, const void* slots, int64_t slot_stride, const int* order,
                int n, int64_t count, void* out, int64_t mean_divisor, void* stream) {
  if (count <= 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::kFloat32:
      return Launch<float>(op, slots, slot_stride, order, n, count, out, mean_divisor, s);
    case DType::kFloat64:
      return Launch<double>(op, slots, slot_stride, order, n, count, out, mean_divisor, s);
    case DType::kHalf:
      return Launch<__half>(op, slots, slot_stride, order, n, count, out, mean_divisor, s);
    case DType::kBFloat16:
      return Launch<__nv_bfloat16>(op, slots, slot_stride, order, n, count, out, mean_divisor, s);
    case DType::kInt32:
      return Launch<int32_t>(op, slots, slot_stride, order, n, count, out, mean_divisor, s);
    case DType::kInt64:
      return Launch<int64_t>(op, slots, slot_stride, order, n, count, out, mean_divisor, s);
    default:
      return;
  }
}

}  // namespace troupe::nccl
