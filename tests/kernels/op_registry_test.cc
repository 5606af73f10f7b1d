#include "kernels/op_registry.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

TEST(OpRegistryTest, IdentityForwardsBuffer) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3});
  Tensor y = *RunOp1("Identity", std::vector{x});
  EXPECT_TRUE(y.SharesBufferWith(x));
}

TEST(OpRegistryTest, UnknownOpAndArity) {
  EXPECT_EQ(RunOp1("NoSuchOp", {}).status().code(), StatusCode::kNotFound);
  Tensor x = Tensor::Scalar(1.0f);
  Status s = RunOp1("Identity", std::vector{x, x}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Identity: expects 1 inputs, got 2"), std::string::npos);
}

TEST(OpRegistryTest, DuplicateRegistrationRejected) {
  OpRegistry r;
  ASSERT_TRUE(r.RegisterOp({.name = "X"}).ok());
  EXPECT_EQ(r.RegisterOp({.name = "X"}).code(), StatusCode::kAlreadyExists);
}

TEST(AttrMapTest, TypedGetters) {
  AttrMap a{{"strides", std::vector<int64_t>{1, 2, 2, 1}}, {"padding", std::string("SAME")}};
  EXPECT_EQ(a.GetInts("strides")->size(), 4u);
  EXPECT_EQ(a.GetInt("padding").status().message(), "attribute 'padding' is not of type int");
  EXPECT_EQ(a.GetInt("axis").status().message(), "missing attribute 'axis'");
  EXPECT_EQ(*a.GetIntOr("axis", -1), -1);
  EXPECT_EQ(a.ToString(), "padding=SAME,strides=[1 2 2 1]");
}

}  // namespace
}  // namespace troupe
