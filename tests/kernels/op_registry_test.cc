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

// AllocateOutputRef hands out the context's own output tensor (writes through it are the
// output), in order or not, from the default allocator or an OutputAllocatorFn; an allocator's
// error names the op and the output.
TEST(KernelContextTest, AllocateOutputRefIsTheOutputItself) {
  const AttrMap attrs;
  KernelContext plain("K", {}, attrs);
  Result<Tensor*> second = plain.AllocateOutputRef(1, DType::kFloat32, TensorShape{2});
  ASSERT_TRUE(second.ok()) << second.status();
  (*second)->data<float>()[0] = 5;
  Result<Tensor*> first = plain.AllocateOutputRef(0, DType::kInt32, TensorShape{});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(plain.outputs().size(), 2u);
  EXPECT_EQ(*first, &plain.outputs()[0]);
  EXPECT_EQ(plain.outputs()[1].data<float>()[0], 5);
  EXPECT_EQ(plain.outputs()[0].dtype(), DType::kInt32);

  struct Counts {
    int calls = 0;
  } counts;
  auto fn = [](void* state, int index, DType dtype, const TensorShape& shape,
               Tensor** out) -> Status {
    ++static_cast<Counts*>(state)->calls;
    if (index == 1) return ResourceExhaustedError("no room");
    TROUPE_ASSIGN_OR_RETURN(**out, Tensor::Allocate(dtype, shape));
    return Status::OK();
  };
  KernelContext ctx("K", {}, attrs, Device::Cpu(), nullptr, fn, &counts);
  Result<Tensor*> out = ctx.AllocateOutputRef(0, DType::kFloat32, TensorShape{3});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, &ctx.outputs()[0]);
  EXPECT_EQ((*out)->shape(), TensorShape{3});
  Status failed = ctx.AllocateOutputRef(1, DType::kFloat32, TensorShape{3}).status();
  EXPECT_EQ(failed.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(failed.message(), "K output 1: no room");
  // Allocated again: the context's copy-returning call goes through the same allocator.
  Result<Tensor> again = ctx.AllocateOutput(0, DType::kFloat32, TensorShape{4});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->SharesBufferWith(ctx.outputs()[0]));
  EXPECT_EQ(counts.calls, 3);
}

// An OutputAllocatorFn may hand out one of the kernel's inputs as the output (the executor's
// forwarding): AllocateOutputRef returns that input itself, and the output list keeps an
// uninitialized tensor in its place for the caller to resolve.
TEST(KernelContextTest, AllocatorMayHandOutAnInput) {
  const AttrMap attrs;
  Tensor inputs[] = {*Tensor::FromVector<float>({1, 2, 3}, TensorShape{3})};
  auto fn = [](void* state, int, DType, const TensorShape&, Tensor** out) -> Status {
    *out = static_cast<Tensor*>(state);
    return Status::OK();
  };
  KernelContext ctx("K", inputs, attrs, Device::Cpu(), nullptr, fn, &inputs[0]);
  Result<Tensor*> out = ctx.AllocateOutputRef(0, DType::kFloat32, TensorShape{3});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, &inputs[0]);
  (*out)->data<float>()[1] = 7;
  EXPECT_EQ(ctx.input(0).data<float>()[1], 7);
  ASSERT_EQ(ctx.outputs().size(), 1u);
  EXPECT_FALSE(ctx.outputs()[0].initialized());
  // Out of order (the slow path) the same.
  Result<Tensor*> third = ctx.AllocateOutputRef(2, DType::kFloat32, TensorShape{3});
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(*third, &inputs[0]);
  EXPECT_EQ(ctx.outputs().size(), 3u);
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
