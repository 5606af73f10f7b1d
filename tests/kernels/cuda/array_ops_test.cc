// GPU array ops against the CPU kernels, all bit-equal: Cast, the views (which must share the
// input's device buffer), OnesLike/ZerosLike, Fill, AddN and Transpose.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using gpu_testing::ExpectBitEqual;
using testing_util::Make;
using testing_util::Random;

// int64 ranges (beyond int): a 64-bit generator.
template <typename T>
Tensor RandomInts(TensorShape shape, uint32_t seed, int64_t lo = -5, int64_t hi = 5) {
  return testing_util::RandomInts<T, int64_t, std::mt19937_64>(shape, seed, lo, hi);
}

TEST(GpuArrayOps, CastLeNetTypes) {
  TROUPE_SKIP_WITHOUT_GPU();
  // Fractions of both signs: float -> int truncates toward zero.
  Tensor f = Random({1000}, 1, -1000, 1000);
  for (DType dst : {DType::kInt32, DType::kInt64, DType::kBool, DType::kFloat64, DType::kInt16,
                    DType::kFloat32}) {
    ExpectBitEqual("Cast", {f}, AttrMap{{"DstT", dst}});
  }
  // Narrow integer targets only in range (out of range is undefined behaviour in C++).
  for (DType dst : {DType::kInt8, DType::kUInt8, DType::kUInt32, DType::kUInt64}) {
    ExpectBitEqual("Cast", {Random({1000}, 7, 0, 127)}, AttrMap{{"DstT", dst}});
  }
  ExpectBitEqual("Cast", {Make<float>({0.0f, -0.0f, 0.5f, -0.5f, 1e-30f, 3.0f}, {6})},
                 AttrMap{{"DstT", DType::kBool}});
  ExpectBitEqual("Cast", {Random<double>({500}, 2, -1e6, 1e6)}, AttrMap{{"DstT", DType::kFloat32}});
  ExpectBitEqual("Cast", {Random<double>({500}, 3, -1e6, 1e6)}, AttrMap{{"DstT", DType::kInt32}});
  // Large int64 values round to nearest float.
  ExpectBitEqual("Cast", {RandomInts<int64_t>({500}, 4, -(int64_t{1} << 60), int64_t{1} << 60)},
                 AttrMap{{"DstT", DType::kFloat32}});
  for (DType src : {DType::kInt32, DType::kInt64}) {
    Tensor x = src == DType::kInt32 ? RandomInts<int32_t>({300}, 5, -100000, 100000)
                                    : RandomInts<int64_t>({300}, 5, -100000, 100000);
    for (DType dst : {DType::kFloat32, DType::kFloat64, DType::kBool, DType::kInt32, DType::kInt64,
                      DType::kUInt16}) {
      ExpectBitEqual("Cast", {x}, AttrMap{{"DstT", dst}});
    }
  }
  ExpectBitEqual("Cast", {Make<bool>({true, false, true}, {3})},
                 AttrMap{{"DstT", DType::kFloat32}});
  ExpectBitEqual("Cast", {Random({0, 3}, 6)}, AttrMap{{"DstT", DType::kInt32}});
}

TEST(GpuArrayOps, ViewsShareTheDeviceBuffer) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor x = Random({64, 5, 5, 16}, 10);
  const std::vector<std::pair<std::string, AttrMap>> views = {
      {"Identity", {}},
      {"Reshape", AttrMap{{"shape", std::vector<int64_t>{-1, 400}}}},
      {"ExpandDims", AttrMap{{"axis", int64_t{-1}}}},
      {"Squeeze", {}}};
  for (const auto& [op, attrs] : views) ExpectBitEqual(op, {x}, attrs);
  ExpectBitEqual("Squeeze", {Random({3, 1, 4, 1}, 11)},
                 AttrMap{{"squeeze_dims", std::vector<int64_t>{1}}});
  auto d = gpu::CopyTo(x, Device::Gpu(0));
  ASSERT_TRUE(d.ok());
  for (const auto& [op, attrs] : views) {
    auto r = RunOp1(op, std::vector<Tensor>{*d}, attrs, Device::Gpu(0));
    ASSERT_TRUE(r.ok()) << op << ": " << r.status().ToString();
    EXPECT_EQ(r->device(), Device::Gpu(0)) << op;
    EXPECT_TRUE(r->SharesBufferWith(*d)) << op;
  }
}

TEST(GpuArrayOps, OnesZerosFill) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (const char* op : {"OnesLike", "ZerosLike"}) {
    ExpectBitEqual(op, {Random({64, 10}, 20)}, {});
    ExpectBitEqual(op, {Random<double>({7}, 21)}, {});
    ExpectBitEqual(op, {RandomInts<int32_t>({5, 3}, 22)}, {});
    ExpectBitEqual(op, {RandomInts<int64_t>({5}, 23)}, {});
    ExpectBitEqual(op, {Make<bool>({true, false}, {2})}, {});
    ExpectBitEqual(op, {RandomInts<uint8_t>({9}, 24, 0, 9)}, {});
    ExpectBitEqual(op, {Random({0}, 25)}, {});
    ExpectBitEqual(op, {Random({}, 26)}, {});
  }
  ExpectBitEqual("Fill", {Make<float>({2.5f}, {})}, AttrMap{{"dims", std::vector<int64_t>{3, 4}}});
  ExpectBitEqual("Fill", {Make<int64_t>({-7}, {})}, AttrMap{{"dims", std::vector<int64_t>{1001}}});
  ExpectBitEqual("Fill", {Make<double>({0.1}, {})}, AttrMap{{"dims", std::vector<int64_t>{2, 0}}});
  ExpectBitEqual("Fill", {Make<bool>({true}, {})}, AttrMap{{"dims", std::vector<int64_t>{5}}});
}

TEST(GpuArrayOps, AddNInIndexOrder) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (int n : {1, 2, 3, 8, 9, 17}) {
    std::vector<Tensor> in;
    for (int i = 0; i < n; ++i) in.push_back(Random({64, 120}, 30 + i, -100, 100));
    ExpectBitEqual("AddN", in, {});
    std::vector<Tensor> ints;
    for (int i = 0; i < n; ++i) ints.push_back(RandomInts<int64_t>({33}, 60 + i));
    ExpectBitEqual("AddN", ints, {});
  }
  ExpectBitEqual("AddN", {Random({0, 2}, 90), Random({0, 2}, 91)}, {});
}

TEST(GpuArrayOps, Transpose) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto perm = [](std::vector<int64_t> p) { return AttrMap{{"perm", p}}; };
  ExpectBitEqual("Transpose", {Random({2, 3, 4}, 40)}, perm({2, 0, 1}));
  ExpectBitEqual("Transpose", {Random({64, 28, 28, 6}, 41)}, perm({0, 3, 1, 2}));
  ExpectBitEqual("Transpose", {Random({64, 28, 28, 6}, 42)}, perm({0, 1, 2, 3}));
  ExpectBitEqual("Transpose", {Random({5, 1, 7}, 43)}, perm({2, 1, 0}));
  ExpectBitEqual("Transpose", {RandomInts<int64_t>({3, 4, 5, 6}, 44)}, perm({3, 1, 2, 0}));
  ExpectBitEqual("Transpose", {RandomInts<int8_t>({31, 17}, 45)}, perm({1, 0}));
  ExpectBitEqual("Transpose", {RandomInts<int16_t>({31, 17}, 46)}, perm({-1, 0}));
  ExpectBitEqual("Transpose", {Make<bool>({true, false, false, true, true, false}, {2, 3})},
                 perm({1, 0}));
  ExpectBitEqual("Transpose", {Random({0, 3}, 47)}, perm({1, 0}));
  ExpectBitEqual("Transpose", {Random({1000, 3000}, 48)}, perm({1, 0}));
}

}  // namespace
}  // namespace troupe
