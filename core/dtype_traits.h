// Compile-time mapping between C++ element types and DType. Includes Eigen/Core for half and
// bfloat16, so only files that touch element values include it.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace troupe {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

template <typename T>
struct DTypeOf;  // DTypeOf<float>::value == DType::kFloat32
#define TROUPE_DTYPE_OF(T, D)         \
  template <>                         \
  struct DTypeOf<T> {                 \
    static constexpr DType value = D; \
  }
TROUPE_DTYPE_OF(float, DType::kFloat32);
TROUPE_DTYPE_OF(double, DType::kFloat64);
TROUPE_DTYPE_OF(int32_t, DType::kInt32);
TROUPE_DTYPE_OF(uint8_t, DType::kUInt8);
TROUPE_DTYPE_OF(int16_t, DType::kInt16);
TROUPE_DTYPE_OF(int8_t, DType::kInt8);
TROUPE_DTYPE_OF(std::string, DType::kString);
TROUPE_DTYPE_OF(int64_t, DType::kInt64);
TROUPE_DTYPE_OF(bool, DType::kBool);
TROUPE_DTYPE_OF(bfloat16, DType::kBFloat16);
TROUPE_DTYPE_OF(uint16_t, DType::kUInt16);
TROUPE_DTYPE_OF(half, DType::kHalf);
TROUPE_DTYPE_OF(uint32_t, DType::kUInt32);
TROUPE_DTYPE_OF(uint64_t, DType::kUInt64);
#undef TROUPE_DTYPE_OF

// Calls fn(T{}) with the C++ type of `dtype`; returns false when dtype is not a numeric type
// (string, invalid). Use for kernels that are generic over numeric element types.
template <typename Fn>
bool VisitNumericDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      fn(float{});
      return true;
    case DType::kFloat64:
      fn(double{});
      return true;
    case DType::kInt32:
      fn(int32_t{});
      return true;
    case DType::kUInt8:
      fn(uint8_t{});
      return true;
    case DType::kInt16:
      fn(int16_t{});
      return true;
    case DType::kInt8:
      fn(int8_t{});
      return true;
    case DType::kInt64:
      fn(int64_t{});
      return true;
    case DType::kBool:
      fn(bool{});
      return true;
    case DType::kBFloat16:
      fn(bfloat16{});
      return true;
    case DType::kUInt16:
      fn(uint16_t{});
      return true;
    case DType::kHalf:
      fn(half{});
      return true;
    case DType::kUInt32:
      fn(uint32_t{});
      return true;
    case DType::kUInt64:
      fn(uint64_t{});
      return true;
    default:
      return false;
  }
}

}  // namespace troupe
