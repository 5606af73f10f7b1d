#include "core/dtype.h"

#include <string>

namespace troupe {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kFloat32, "float32", 4}, {DType::kFloat64, "float64", 8},
    {DType::kInt32, "int32", 4},     {DType::kUInt8, "uint8", 1},
    {DType::kInt16, "int16", 2},     {DType::kInt8, "int8", 1},
    {DType::kString, "string", 0},   {DType::kInt64, "int64", 8},
    {DType::kBool, "bool", 1},       {DType::kBFloat16, "bfloat16", 2},
    {DType::kUInt16, "uint16", 2},   {DType::kHalf, "float16", 2},
    {DType::kUInt32, "uint32", 4},   {DType::kUInt64, "uint64", 8},
};

const DTypeInfo* Find(DType dtype) {
  for (const auto& info : kInfos) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

std::string_view DTypeName(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  return info ? info->name : "invalid";
}

Result<DType> DTypeFromName(std::string_view name) {
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kHalf;
  for (const auto& info : kInfos) {
    if (info.name == name) return info.dtype;
  }
  return InvalidArgumentError("unknown dtype '" + std::string(name) +
                              "'; expected one of float32, float64, float16, bfloat16, int8, "
                              "int16, int32, int64, uint8, uint16, uint32, uint64, bool, string");
}

Result<DType> DTypeFromNumber(int64_t number) {
  for (const auto& info : kInfos) {
    if (static_cast<int64_t>(info.dtype) == number) return info.dtype;
  }
  return InvalidArgumentError("unsupported DataType number " + std::to_string(number));
}

size_t DTypeSize(DType dtype) {
  const DTypeInfo* info = Find(dtype);
  return info ? info->size : 0;
}

bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kHalf ||
         dtype == DType::kBFloat16;
}

bool IsInteger(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

bool IsSigned(DType dtype) {
  return IsFloating(dtype) || dtype == DType::kInt8 || dtype == DType::kInt16 ||
         dtype == DType::kInt32 || dtype == DType::kInt64;
}

}  // namespace troupe
