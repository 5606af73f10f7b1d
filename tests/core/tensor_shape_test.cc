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

// Ranks above kInlineDims live on the heap: copies, moves, growth and shrinking across the
// boundary must keep every dim.
TEST(TensorShapeTest, InlineAndHeapRanks) {
  TensorShape s{1, 2, 3, 4, 5, 6};
  s.AddDim(7);  // inline -> heap
  EXPECT_EQ(s.rank(), 7);
  EXPECT_EQ(s.ToString(), "[1,2,3,4,5,6,7]");
  EXPECT_EQ(s.num_elements(), 5040);
  TensorShape copy = s;
  EXPECT_EQ(copy, s);
  copy.set_dim(6, 8);
  EXPECT_NE(copy, s);
  EXPECT_EQ(s.dim(6), 7);  // the copy has its own dims
  TensorShape moved = std::move(copy);
  EXPECT_EQ(moved.ToString(), "[1,2,3,4,5,6,8]");
  moved.InsertDim(0, 9);
  EXPECT_EQ(moved.ToString(), "[9,1,2,3,4,5,6,8]");
  moved.RemoveDim(0);
  moved.RemoveDim(6);  // heap -> inline
  EXPECT_EQ(moved, (TensorShape{1, 2, 3, 4, 5, 6}));
  TensorShape small{2};
  small = s;  // inline <- heap
  EXPECT_EQ(small, s);
  small = TensorShape{3, 4};  // heap <- inline
  EXPECT_EQ(small.ToString(), "[3,4]");
  const std::vector<int64_t> dims = s.dims();
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(TensorShape(dims), s);
  EXPECT_EQ(*TensorShape::FromDims(s.dims()), s);
}

TEST(TensorShapeTest, UnknownRankIsNotAScalar) {
  const TensorShape unknown = TensorShape::UnknownRank();
  EXPECT_EQ(unknown.rank(), -1);
  EXPECT_TRUE(unknown.dims().empty());
  EXPECT_NE(unknown, TensorShape());
  EXPECT_EQ(unknown, TensorShape::UnknownRank());
  TensorShape copy = unknown;
  EXPECT_TRUE(copy.unknown_rank());
  EXPECT_EQ(copy.num_elements(), -1);
}

}  // namespace
}  // namespace troupe
