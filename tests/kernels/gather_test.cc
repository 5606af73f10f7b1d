// GatherV2 (axis 0) and UnsortedSegmentSum: values, shapes, TF-style index errors, unsupported
// attributes, and segment sums that are bitwise the same for any thread count.
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

AttrMap Axis0() { return {{"axis", int64_t{0}}, {"batch_dims", int64_t{0}}}; }

TEST(GatherTest, GathersRowsForAnyIndexShape) {
  Tensor params = Make<float>({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, {4, 3});
  Tensor idx = Make<int32_t>({3, 0, 3, 1, 2, 2}, {2, 3});
  Tensor y = Run1("GatherV2", {params, idx}, Axis0());
  EXPECT_EQ(y.shape(), TensorShape({2, 3, 3}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{30, 31, 32, 0, 1, 2, 30, 31, 32, 10, 11, 12, 20,
                                                  21, 22, 20, 21, 22}));
  // int64 indices, a scalar index, int params, and no attributes (defaults).
  Tensor scalar = Run1("GatherV2", {params, Make<int64_t>({2}, {})});
  EXPECT_EQ(scalar.shape(), TensorShape({3}));
  EXPECT_EQ(Values<float>(scalar), (std::vector<float>{20, 21, 22}));
  Tensor ip = Make<int64_t>({5, 6, 7}, {3});
  EXPECT_EQ(Values<int64_t>(Run1("GatherV2", {ip, Make<int64_t>({2, 2, 0}, {3})})),
            (std::vector<int64_t>{7, 7, 5}));
  // axis = -rank means axis 0.
  EXPECT_EQ(Run1("GatherV2", {ip, Make<int32_t>({1}, {1})}, {{"axis", int64_t{-1}}}).shape(),
            TensorShape({1}));
}

TEST(GatherTest, Errors) {
  Tensor params = Random({5, 2}, 1);
  EXPECT_INVALID(RunStatus("GatherV2", {params, Make<int32_t>({0, 4, 5, 1}, {2, 2})}, Axis0()),
                 "GatherV2:", "indices[1,0] = 5 is not in [0, 5)");
  EXPECT_INVALID(RunStatus("GatherV2", {params, Make<int64_t>({-1}, {1})}, Axis0()),
                 "GatherV2:", "indices[0] = -1 is not in [0, 5)");
  EXPECT_INVALID(RunStatus("GatherV2", {params, Make<int32_t>({0}, {1})}, {{"axis", int64_t{1}}}),
                 "GatherV2:", "'axis' = 1 is not supported", "[5,2]");
  EXPECT_INVALID(
      RunStatus("GatherV2", {params, Make<int32_t>({0}, {1})}, {{"batch_dims", int64_t{1}}}),
      "GatherV2:", "'batch_dims' = 1");
  EXPECT_INVALID(RunStatus("GatherV2", {params, Make<float>({0}, {1})}, Axis0()),
                 "GatherV2:", "'indices'", "float32");
  EXPECT_INVALID(RunStatus("GatherV2", {Make<float>({1}, {}), Make<int32_t>({0}, {1})}, Axis0()),
                 "GatherV2:", "'params'");
}

TEST(UnsortedSegmentSumTest, SumsRowsDropsNegativeIds) {
  Tensor data = Make<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2});
  Tensor ids = Make<int32_t>({2, 0, 2, -1, 0}, {5});
  Tensor y = Run1("UnsortedSegmentSum", {data, ids}, {{"num_segments", int64_t{4}}});
  EXPECT_EQ(y.shape(), TensorShape({4, 2}));
  EXPECT_EQ(Values<float>(y), (std::vector<float>{3 + 9, 4 + 10, 0, 0, 1 + 5, 2 + 6, 0, 0}));
  // Multi-dim ids are a prefix of data's shape.
  Tensor d3 = Make<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y3 = Run1("UnsortedSegmentSum", {d3, Make<int64_t>({1, 1, 0, 0, 1, 1}, {2, 3})},
                   {{"num_segments", int64_t{2}}});
  EXPECT_EQ(Values<int64_t>(y3), (std::vector<int64_t>{3 + 4, 1 + 2 + 5 + 6}));
}

TEST(UnsortedSegmentSumTest, Errors) {
  Tensor data = Random({4, 3}, 1);
  EXPECT_INVALID(RunStatus("UnsortedSegmentSum", {data, Make<int32_t>({0, 1, 3, 2}, {4})},
                           {{"num_segments", int64_t{3}}}),
                 "UnsortedSegmentSum:", "segment_ids[2] = 3 is out of range [0, 3)");
  EXPECT_INVALID(RunStatus("UnsortedSegmentSum", {data, Make<int32_t>({0, 1, 2}, {3})},
                           {{"num_segments", int64_t{3}}}),
                 "UnsortedSegmentSum:", "'segment_ids' [3]", "prefix", "[4,3]");
  EXPECT_INVALID(RunStatus("UnsortedSegmentSum", {data, Make<int32_t>({0, 1, 2, 0}, {4})},
                           {{"num_segments", int64_t{-1}}}),
                 "UnsortedSegmentSum:", "'num_segments' = -1");
}

// Many float rows into few segments: the sum order decides the bits.
TEST(UnsortedSegmentSumTest, SameBitsAnyThreadCountAndInputOrder) {
  ThreadPool one(1, "one"), three(3, "three");
  Tensor data = Random({20000, 8}, 7, -1e3, 1e3);
  Tensor ids = RandomInts<int32_t>({20000}, 8, -1, 40);
  AttrMap a{{"num_segments", int64_t{41}}};
  Tensor y = (*RunOn(&one, "UnsortedSegmentSum", {data, ids}, a))[0];
  EXPECT_TRUE(y.BitEqual((*RunOn(&three, "UnsortedSegmentSum", {data, ids}, a))[0]));
  EXPECT_TRUE(y.BitEqual((*RunOn(nullptr, "UnsortedSegmentSum", {data, ids}, a))[0]));
  // Each segment adds its rows in increasing input order: a sequential float loop agrees.
  std::vector<float> want(41 * 8, 0.0f);
  for (int64_t i = 0; i < 20000; ++i) {
    const int32_t s = ids.data<int32_t>()[i];
    if (s < 0) continue;
    for (int64_t j = 0; j < 8; ++j)
      want[static_cast<size_t>(s * 8 + j)] += data.data<float>()[i * 8 + j];
  }
  EXPECT_EQ(Values<float>(y), want);
}

}  // namespace
}  // namespace troupe
