#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/dtype_traits.h"
#include "core/tensor_spec.h"

namespace troupe {
namespace {

TEST(TensorTest, AllocateIsAligned) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape{3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t.num_elements(), 15);
  EXPECT_EQ(t.byte_size(), 60u);
  EXPECT_TRUE(t.device().is_cpu());
}

TEST(TensorTest, AllocateRejectsUnknownShape) {
  auto r = Tensor::Allocate(DType::kFloat32, TensorShape{-1, 3});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[?,3]"), std::string::npos);
  EXPECT_FALSE(Tensor::Allocate(DType::kInvalid, TensorShape{}).ok());
}

TEST(TensorTest, SliceSharesBuffer) {
  Tensor t = *Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, TensorShape{3, 2});
  Tensor s = *t.Slice(1, 3);
  EXPECT_EQ(s.shape(), (TensorShape{2, 2}));
  EXPECT_TRUE(s.SharesBufferWith(t));
  EXPECT_EQ(s.data<float>()[0], 2.0f);
  s.data<float>()[0] = 42;
  EXPECT_EQ(t.data<float>()[2], 42.0f);
  EXPECT_FALSE(t.Slice(2, 4).ok());
  EXPECT_FALSE(Tensor::Scalar(1.0f).Slice(0, 0).ok());
}

TEST(TensorTest, ReshapeAndDeepCopy) {
  Tensor t = *Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape{2, 2});
  Tensor r = *t.Reshape(TensorShape{4});
  EXPECT_TRUE(r.SharesBufferWith(t));
  EXPECT_FALSE(t.Reshape(TensorShape{3}).ok());
  Tensor c = t.DeepCopy();
  EXPECT_FALSE(c.SharesBufferWith(t));
  EXPECT_TRUE(c.BitEqual(t));
  c.data<int32_t>()[0] = 9;
  EXPECT_FALSE(c.BitEqual(t));
}

TEST(TensorTest, StringTensors) {
  Tensor t = *Tensor::Allocate(DType::kString, TensorShape{2});
  t.data<std::string>()[0] = "hello";
  t.data<std::string>()[1] = std::string(1000, 'x');
  Tensor c = t.DeepCopy();
  EXPECT_TRUE(c.BitEqual(t));
  EXPECT_EQ(c.data<std::string>()[1].size(), 1000u);
  EXPECT_EQ(Tensor::Scalar(std::string("abc")).dtype(), DType::kString);
}

TEST(TensorTest, HalfAndScalars) {
  Tensor h = Tensor::Scalar(half(1.5f));
  EXPECT_EQ(h.dtype(), DType::kHalf);
  EXPECT_EQ(static_cast<float>(h.scalar<half>()), 1.5f);
  EXPECT_EQ(Tensor::Scalar<int64_t>(7).dtype(), DType::kInt64);
}

TEST(TensorTest, FromBufferChecksSize) {
  auto buf = *TensorBuffer::Allocate(CpuAllocator(), 16);
  EXPECT_TRUE(Tensor::FromBuffer(DType::kFloat32, TensorShape{4}, buf).ok());
  EXPECT_FALSE(Tensor::FromBuffer(DType::kFloat32, TensorShape{5}, buf).ok());
  EXPECT_FALSE(Tensor::FromBuffer(DType::kFloat32, TensorShape{4}, buf, 4).ok());
}

TEST(TensorTest, WrapRunsRelease) {
  static float storage[4];
  bool released = false;
  {
    auto buf =
        TensorBuffer::Wrap(storage, sizeof(storage), Device::Cpu(), [&] { released = true; });
    Tensor t = *Tensor::FromBuffer(DType::kFloat32, TensorShape{4}, buf);
    EXPECT_EQ(t.data<float>(), storage);
  }
  EXPECT_TRUE(released);
}

TEST(TensorSpecTest, Compatibility) {
  TensorSpec spec{TensorShape{-1, 10}, DType::kFloat32, "x"};
  EXPECT_TRUE(spec.IsCompatibleWith(*Tensor::Zeros(DType::kFloat32, TensorShape{3, 10})));
  EXPECT_FALSE(spec.IsCompatibleWith(*Tensor::Zeros(DType::kFloat64, TensorShape{3, 10})));
  EXPECT_EQ(spec.ToString(), "TensorSpec(shape=[?,10], dtype=float32, name='x')");
}

}  // namespace
}  // namespace troupe
