// DType: element types with TensorFlow's DataType numbers (types.proto), so they can be written
// into checkpoints and protos as-is. C++ type mapping lives in core/dtype_traits.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace troupe {

enum class DType : int32_t {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 5,
  kInt8 = 6,
  kString = 7,
  kInt64 = 9,
  kBool = 10,
  kBFloat16 = 14,
  kUInt16 = 17,
  kHalf = 19,
  kUInt32 = 22,
  kUInt64 = 23,
};

// TF's Python name ("float32", "int64", "string", ...).
std::string_view DTypeName(DType dtype);
// Accepts TF's Python names and a few aliases ("float" -> float32, "double" -> float64).
Result<DType> DTypeFromName(std::string_view name);
// Validates a DataType number read from a file or proto.
Result<DType> DTypeFromNumber(int64_t number);

// Bytes per element; 0 for variable-size types (string) and kInvalid.
size_t DTypeSize(DType dtype);
bool IsFloating(DType dtype);  // float32/64, half, bfloat16
bool IsInteger(DType dtype);   // signed or unsigned integers (not bool)
bool IsSigned(DType dtype);

}  // namespace troupe
