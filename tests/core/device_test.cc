#include "core/device.h"

#include <gtest/gtest.h>

namespace troupe {
namespace {

TEST(DeviceTest, Parse) {
  EXPECT_EQ(*Device::Parse("cpu"), Device::Cpu(0));
  EXPECT_EQ(*Device::Parse("gpu:3"), Device::Gpu(3));
  EXPECT_EQ(*Device::Parse("/device:GPU:1"), Device::Gpu(1));
  EXPECT_EQ(Device::Gpu(2).ToString(), "gpu:2");
  EXPECT_EQ(Device::Parse("tpu:0").status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(Device::Parse("gpu:").ok());
  EXPECT_FALSE(Device::Parse("gpu:x").ok());
}

}  // namespace
}  // namespace troupe
