// GPU Slice, Pad and BroadcastTo against the CPU kernels: copies, so every case must be
// bit-equal, at ResNet-50's stem shapes (Pad before the 7x7 stride-2 convolution, the Slice
// that is its gradient), the Sum/Mean gradient shapes BroadcastTo serves, and edge shapes
// (rank 0 and 1, size-1 and empty dims, every element size).
#include <cstdint>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using gpu_testing::ExpectBitEqual;
using gpu_testing::RunOnBoth;
using testing_util::Make;
using testing_util::Random;
using testing_util::RandomInts;

AttrMap Paddings(std::vector<int64_t> p) { return AttrMap{{"paddings", p}}; }
AttrMap Box(std::vector<int64_t> begin, std::vector<int64_t> size) {
  return AttrMap{{"begin", begin}, {"size", size}};
}
AttrMap Shape(std::vector<int64_t> dims) { return AttrMap{{"shape", dims}}; }

TEST(GpuSlicing, PadAtResNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectBitEqual("Pad", {Random({32, 224, 224, 3}, 1)}, Paddings({0, 0, 3, 3, 3, 3, 0, 0}));
  ExpectBitEqual("Pad", {Random({32, 112, 112, 64}, 2)}, Paddings({0, 0, 1, 1, 1, 1, 0, 0}));
  ExpectBitEqual("Pad", {Random({2, 5, 7, 3}, 3)}, Paddings({1, 0, 0, 2, 3, 1, 2, 2}));
}

TEST(GpuSlicing, SliceAtResNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectBitEqual("Slice", {Random({32, 230, 230, 3}, 4)}, Box({0, 3, 3, 0}, {32, 224, 224, 3}));
  ExpectBitEqual("Slice", {Random({2, 5, 7, 3}, 5)}, Box({1, 2, 0, 1}, {1, -1, 7, 2}));
}

TEST(GpuSlicing, EdgeShapesAndElementSizes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectBitEqual("Pad", {Make<float>({2.5f}, {})}, Paddings({}));
  ExpectBitEqual("Slice", {Make<float>({2.5f}, {})}, Box({}, {}));
  ExpectBitEqual("Pad", {Random({17}, 6)}, Paddings({4, 9}));
  ExpectBitEqual("Slice", {Random({17}, 7)}, Box({16}, {1}));
  ExpectBitEqual("Pad", {Random({3, 0, 2}, 8)}, Paddings({1, 1, 2, 0, 0, 3}));
  ExpectBitEqual("Slice", {Random({3, 4, 2}, 9)}, Box({1, 2, 0}, {2, 0, 2}));
  ExpectBitEqual("Pad", {RandomInts<int64_t>({4, 6}, 10)}, Paddings({1, 2, 3, 4}));
  ExpectBitEqual("Slice", {RandomInts<int32_t>({4, 6}, 11)}, Box({1, 1}, {2, 3}));
  ExpectBitEqual("Pad", {Random<double>({3, 5}, 12)}, Paddings({0, 1, 1, 0}));
  ExpectBitEqual("Slice", {Make<bool>({true, false, true, true, false, false}, {2, 3})},
                 Box({0, 1}, {2, 2}));
}

TEST(GpuSlicing, BadBoxIsTheCpuError) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto r = RunOnBoth("Slice", {Random({4, 4}, 13)}, Box({2, 0}, {3, 4}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("out of bounds"), std::string::npos) << r.status();
  auto p = RunOnBoth("Pad", {Random({4, 4}, 14)}, Paddings({1, -1, 0, 0}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("negative"), std::string::npos) << p.status();
}

// The gradients of Sum and Mean over BatchNorm's and LayerNorm's axes, and of a full reduction.
TEST(GpuBroadcastTo, ReductionGradientShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectBitEqual("BroadcastTo", {Random({1, 1, 1, 64}, 20)}, Shape({32, 56, 56, 64}));
  ExpectBitEqual("BroadcastTo", {Random({12, 64, 1}, 21)}, Shape({12, 64, 128}));
  ExpectBitEqual("BroadcastTo", {Make<float>({1.5f}, {})}, Shape({128, 10}));
  ExpectBitEqual("BroadcastTo", {Random({3, 1, 5}, 22)}, Shape({2, 3, 4, 5}));
  ExpectBitEqual("BroadcastTo", {RandomInts<int64_t>({1, 7}, 23)}, Shape({5, 7}));
  ExpectBitEqual("BroadcastTo", {Random<double>({4, 1}, 24)}, Shape({4, 9}));
  ExpectBitEqual("BroadcastTo", {Random({4, 1}, 25)}, Shape({4, 0}));
  ExpectBitEqual("BroadcastTo", {Random({6}, 26)}, Shape({6}));
}

TEST(GpuBroadcastTo, BadShapeIsTheCpuError) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto r = RunOnBoth("BroadcastTo", {Random({3, 2}, 27)}, Shape({3, 4}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("BroadcastTo"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace troupe
