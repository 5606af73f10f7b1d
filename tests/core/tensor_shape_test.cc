#include "core/tensor_shape.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

TEST(TensorShapeTest, Basics) {
  TensorShape s{2, 3};
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s.num_elements(), 6);
  EXPECT_TRUE(s.IsFullyDefined());
  EXPECT_EQ(s.ToString(), "[2,3]");
  EXPECT_EQ(TensorShape().num_elements(), 1);
  EXPECT_EQ(TensorShape().ToString(), "[]");
}

TEST(TensorShapeTest, UnknownDims) {
  TensorShape s{-1, 28, 28, 1};
  EXPECT_FALSE(s.IsFullyDefined());
  EXPECT_EQ(s.num_elements(), -1);
  EXPECT_EQ(s.ToString(), "[?,28,28,1]");
  EXPECT_TRUE(s.IsCompatibleWith(TensorShape{64, 28, 28, 1}));
  EXPECT_FALSE(s.IsCompatibleWith(TensorShape{64, 28, 27, 1}));
  EXPECT_FALSE(s.IsCompatibleWith(TensorShape{64, 28, 28}));
  EXPECT_TRUE(TensorShape::UnknownRank().IsCompatibleWith(s));
  EXPECT_EQ(TensorShape::UnknownRank().ToString(), "<unknown>");
  EXPECT_EQ(*s.MergeWith(TensorShape{8, -1, 28, 1}), (TensorShape{8, 28, 28, 1}));
  EXPECT_FALSE(s.MergeWith(TensorShape{8, 1, 28, 1}).ok());
}

TEST(TensorShapeTest, MostSpecificCommonShape) {
  EXPECT_EQ(TensorShape({2, 3}).MostSpecificCommonShape(TensorShape{4, 3}), (TensorShape{-1, 3}));
  EXPECT_TRUE(TensorShape({2}).MostSpecificCommonShape(TensorShape{2, 3}).unknown_rank());
}

TEST(TensorShapeTest, FromDimsValidates) {
  EXPECT_EQ(TensorShape::FromDims({-2, 3}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(TensorShape::FromDims({1LL << 40, 1LL << 40}).ok());
  EXPECT_TRUE(TensorShape::FromDims({0, 1LL << 62, 1LL << 62}).ok());  // zero elements
}

}  // namespace
}  // namespace troupe
