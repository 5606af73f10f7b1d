#include "core/dtype.h"

#include <gtest/gtest.h>

#include "core/dtype_traits.h"

namespace troupe {
namespace {

TEST(DTypeTest, NumbersMatchTensorFlow) {
  EXPECT_EQ(static_cast<int>(DType::kFloat32), 1);
  EXPECT_EQ(static_cast<int>(DType::kFloat64), 2);
  EXPECT_EQ(static_cast<int>(DType::kInt32), 3);
  EXPECT_EQ(static_cast<int>(DType::kString), 7);
  EXPECT_EQ(static_cast<int>(DType::kInt64), 9);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), 14);
  EXPECT_EQ(static_cast<int>(DType::kHalf), 19);
  EXPECT_EQ(static_cast<int>(DType::kUInt64), 23);
}

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kFloat32), 4u);
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kString), 0u);
  EXPECT_EQ(DTypeName(DType::kHalf), "float16");
  EXPECT_EQ(*DTypeFromName("double"), DType::kFloat64);
  EXPECT_EQ(*DTypeFromName("uint32"), DType::kUInt32);
  EXPECT_EQ(DTypeFromName("float128").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*DTypeFromNumber(9), DType::kInt64);
  EXPECT_FALSE(DTypeFromNumber(20).ok());  // DT_RESOURCE is never a tensor element type
  EXPECT_TRUE(IsFloating(DType::kBFloat16));
  EXPECT_FALSE(IsFloating(DType::kInt32));
  EXPECT_TRUE(IsInteger(DType::kUInt8));
  EXPECT_FALSE(IsInteger(DType::kBool));
}

TEST(DTypeTest, TraitsAgreeWithSizes) {
  EXPECT_EQ(DTypeOf<half>::value, DType::kHalf);
  EXPECT_EQ(sizeof(half), DTypeSize(DType::kHalf));
  EXPECT_EQ(sizeof(bfloat16), DTypeSize(DType::kBFloat16));
  size_t visited = 0;
  EXPECT_TRUE(VisitNumericDType(DType::kFloat64, [&](auto v) { visited = sizeof(v); }));
  EXPECT_EQ(visited, 8u);
  EXPECT_FALSE(VisitNumericDType(DType::kString, [](auto) {}));
}

}  // namespace
}  // namespace troupe
