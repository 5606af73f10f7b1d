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

// A wrapped kernel runs through the wrapper, and the pointer handed out before the wrap now
// calls the wrapper too (the executor resolves kernels once).
TEST(OpRegistryTest, WrapKernelKeepsTheLookedUpPointer) {
  OpRegistry r;
  for (const char* name : {"A", "B"}) {
    OpDef def;
    def.name = name;
    ASSERT_TRUE(r.RegisterOp(def).ok());
  }
  int calls = 0, wrapped_calls = 0;
  ASSERT_TRUE(r.RegisterKernel("A", Device::Type::kCpu, [&](KernelContext&) {
                 ++calls;
                 return Status::OK();
               }).ok());
  EXPECT_EQ(r.KernelOpNames(Device::Type::kCpu), std::vector<std::string>{"A"});
  EXPECT_TRUE(r.KernelOpNames(Device::Type::kGpu).empty());
  const KernelFn* before = *r.LookupKernel("A", Device::Type::kCpu);
  ASSERT_TRUE(r.WrapKernel("A", Device::Type::kCpu, [&](KernelFn inner) -> KernelFn {
                 return [&wrapped_calls, inner](KernelContext& ctx) {
                   ++wrapped_calls;
                   return inner(ctx);
                 };
               }).ok());
  EXPECT_EQ(*r.LookupKernel("A", Device::Type::kCpu), before);
  const AttrMap attrs;
  KernelContext ctx("A", {}, attrs);
  ASSERT_TRUE((*before)(ctx).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(wrapped_calls, 1);
  EXPECT_EQ(r.WrapKernel("B", Device::Type::kCpu, [](KernelFn f) { return f; }).code(),
            StatusCode::kNotFound);
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
