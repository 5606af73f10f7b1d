// GPU GatherV2 and UnsortedSegmentSum against the CPU kernels, bit for bit: the Embedding's
// lookup and gradient at transformer shapes, int32/int64 ids, other dtypes and odd row sizes,
// repeated, negative and many ids (a multi-pass sort), scalar and empty shapes, run-to-run
// determinism, and what the GPU does with out-of-range ids where the CPU returns an error
// (GatherV2: zero rows; UnsortedSegmentSum: the rows are dropped).
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

AttrMap Segments(int64_t n) { return AttrMap{{"num_segments", n}}; }

// Ids in [lo, hi] of any shape.
template <typename I = int32_t>
Tensor Ids(const TensorShape& shape, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<I> v(static_cast<size_t>(shape.num_elements()));
  for (I& x : v) x = static_cast<I>(dist(gen));
  return Make<I>(v, shape);
}

Result<std::vector<Tensor>> RunOnGpu(const std::string& op, const std::vector<Tensor>& in,
                                     const AttrMap& attrs) {
  std::vector<Tensor> dev;
  for (const Tensor& t : in) {
    TROUPE_ASSIGN_OR_RETURN(Tensor d, gpu::CopyTo(t, Device::Gpu(0)));
    dev.push_back(d);
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp(op, dev, attrs, Device::Gpu(0)));
  for (Tensor& t : out) {
    TROUPE_ASSIGN_OR_RETURN(t, gpu::ToHost(t));
  }
  return out;
}

TEST(GpuGather, EmbeddingLookup) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor table = Random({100, 128}, 1);
  ExpectExact("GatherV2", {table, Ids({12, 64}, 0, 99, 2)}, {});
  ExpectExact("GatherV2", {table, Ids<int64_t>({768}, 0, 99, 3)}, {});
  ExpectExact("GatherV2", {Random<double>({100, 3, 5}, 4), Ids({7, 2}, 0, 99, 5)}, {});
  ExpectExact("GatherV2", {RandomInts<int64_t>({50, 3}, 6), Ids<int64_t>({9}, 0, 49, 7)}, {});
}

TEST(GpuGather, OddRowSizesAndDTypes) {
  TROUPE_SKIP_WITHOUT_GPU();
  // Rows of 3 bytes (1-byte words), 6 bytes (2-byte words), 12 bytes (4-byte words).
  std::vector<uint8_t> bytes(30);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(7 * i + 1);
  ExpectExact("GatherV2", {Make<uint8_t>(bytes, {10, 3}), Ids({11}, 0, 9, 8)}, {});
  std::vector<int16_t> shorts(21);
  for (size_t i = 0; i < shorts.size(); ++i) shorts[i] = static_cast<int16_t>(-300 * i);
  ExpectExact("GatherV2", {Make<int16_t>(shorts, {7, 3}), Ids({4, 5}, 0, 6, 9)}, {});
  ExpectExact("GatherV2", {Random({9, 3}, 10), Ids<int64_t>({13}, 0, 8, 11)}, {});
  ExpectExact("GatherV2", {RandomInts<int32_t>({6, 5}, 12), Ids({3}, 0, 5, 13)}, {});
}

TEST(GpuGather, ScalarRankOneAndEmpty) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectExact("GatherV2", {Random({10, 4}, 20), Make<int32_t>({7}, {})}, {});  // scalar index
  ExpectExact("GatherV2", {Random({10}, 21), Ids({6}, 0, 9, 22)}, {});         // scalar rows
  ExpectExact("GatherV2", {Random({10}, 21), Ids({6}, 0, 9, 22)}, {{"axis", int64_t{-1}}});
  ExpectExact("GatherV2", {Random({10, 4}, 23), Make<int32_t>({}, {0})}, {});
  ExpectExact("GatherV2", {Random({10, 0}, 24), Ids({5}, 0, 9, 25)}, {});
  ExpectExact("GatherV2", {Random({0, 4}, 26), Make<int64_t>({}, {0, 3})}, {});
}

TEST(GpuGather, OutOfRangeIdsGiveZeroRowsOnTheGpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor table = Random({5, 3}, 30, 1, 2);  // no zeros in the table
  Tensor ids = Make<int32_t>({1, 5, -1, 4, 100}, {5});
  // The CPU names the bad index.
  auto cpu = RunOp("GatherV2", std::vector<Tensor>{table, ids});
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cpu.status().message().find("indices[1] = 5"), std::string::npos) << cpu.status();
  auto gpu = RunOnGpu("GatherV2", {table, ids}, {});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const float* g = (*gpu)[0].data<float>();
  const float* t = table.data<float>();
  const int64_t want[] = {1, -1, -1, 4, -1};  // -1: a zero row
  for (int i = 0; i < 5; ++i) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(g[i * 3 + c], want[i] < 0 ? 0.0f : t[want[i] * 3 + c]) << "row " << i;
    }
  }
}

TEST(GpuGather, BadAxisGivesTheCpuError) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto p = gpu::CopyTo(Random({4, 3}, 40), Device::Gpu(0));
  auto i = gpu::CopyTo(Make<int32_t>({1}, {1}), Device::Gpu(0));
  ASSERT_TRUE(p.ok() && i.ok());
  auto r = RunOp("GatherV2", std::vector<Tensor>{*p, *i}, {{"axis", int64_t{1}}}, Device::Gpu(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("only axis 0"), std::string::npos) << r.status();
}

TEST(GpuSegmentSum, EmbeddingGradient) {
  TROUPE_SKIP_WITHOUT_GPU();
  // 768 rows of width 128 into a vocabulary of 100: random floats, summed in the CPU's order.
  ExpectExact("UnsortedSegmentSum", {Random({768, 128}, 50), Ids({768}, 0, 99, 51)}, Segments(100));
  ExpectExact("UnsortedSegmentSum", {Random({12, 64, 128}, 52), Ids<int64_t>({12, 64}, 0, 99, 53)},
              Segments(100));
  ExpectExact("UnsortedSegmentSum", {Random<double>({300, 7}, 54), Ids({300}, 0, 9, 55)},
              Segments(10));
  ExpectExact("UnsortedSegmentSum", {RandomInts<int32_t>({200, 3}, 56), Ids({200}, 0, 4, 57)},
              Segments(5));
  ExpectExact("UnsortedSegmentSum", {RandomInts<int64_t>({200, 3}, 58), Ids({200}, 0, 4, 59)},
              Segments(5));
}

TEST(GpuSegmentSum, RepeatedNegativeAndManyIds) {
  TROUPE_SKIP_WITHOUT_GPU();
  // Every row into one segment (the longest sum), the others empty (zeros).
  ExpectExact("UnsortedSegmentSum", {Random({768, 33}, 60), Ids({768}, 3, 3, 61)}, Segments(8));
  // Negative ids are dropped on both devices.
  ExpectExact("UnsortedSegmentSum", {Random({500, 5}, 62), Ids({500}, -3, 9, 63)}, Segments(10));
  ExpectExact("UnsortedSegmentSum",
              {Random({500, 5}, 64), Ids<int64_t>({500}, -1000000000000, 6, 65)}, Segments(7));
  // 100000 ids into 5000 segments: a sort over several radix passes.
  ExpectExact("UnsortedSegmentSum", {Random({100000, 3}, 66), Ids({100000}, -1, 4999, 67)},
              Segments(5000));
  // More segments than ids, odd widths, a single row.
  ExpectExact("UnsortedSegmentSum", {Random({7, 129}, 68), Ids({7}, 0, 999, 69)}, Segments(1000));
  ExpectExact("UnsortedSegmentSum", {Random({4}, 70), Make<int32_t>({2}, {})}, Segments(3));
  ExpectExact("UnsortedSegmentSum", {Random({6}, 71), Make<int32_t>({1, 0, 1, 1, -1, 0}, {6})},
              Segments(2));
}

TEST(GpuSegmentSum, EmptyShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  // No ids: zeros (the GPU output buffer is not pre-zeroed, so this checks the fill).
  ExpectExact("UnsortedSegmentSum", {Random({0, 4}, 80), Make<int32_t>({}, {0})}, Segments(5));
  // No segments (the CPU rejects ids >= 0 then, so all are dropped).
  ExpectExact("UnsortedSegmentSum", {Random({3, 4}, 81), Ids({3}, -3, -1, 82)}, Segments(0));
  ExpectExact("UnsortedSegmentSum", {Random({3, 0}, 83), Ids({3}, 0, 2, 84)}, Segments(3));
}

TEST(GpuSegmentSum, OutOfRangeIdsAreDroppedOnTheGpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor data = Random({6, 4}, 90);
  Tensor ids = Make<int64_t>({0, 3, 1, 7, 0, 2}, {6});
  auto cpu = RunOp("UnsortedSegmentSum", std::vector<Tensor>{data, ids}, Segments(3));
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cpu.status().message().find("segment_ids[1] = 3"), std::string::npos) << cpu.status();
  // The GPU result is the CPU's with those rows dropped (their ids made negative).
  auto gpu = RunOnGpu("UnsortedSegmentSum", {data, ids}, Segments(3));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto want =
      RunOp("UnsortedSegmentSum",
            std::vector<Tensor>{data, Make<int64_t>({0, -1, 1, -1, 0, 2}, {6})}, Segments(3));
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(BitEqual((*want)[0], (*gpu)[0]));
}

TEST(GpuGatherAndSegmentSum, Deterministic) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectDeterministic("UnsortedSegmentSum", {Random({768, 128}, 100), Ids({768}, 0, 99, 101)},
                      Segments(100));
  ExpectDeterministic("UnsortedSegmentSum", {Random({100000, 3}, 102), Ids({100000}, 0, 4999, 103)},
                      Segments(5000));
  ExpectDeterministic("GatherV2", {Random({100, 128}, 104), Ids({12, 64}, 0, 99, 105)}, {});
}

}  // namespace
}  // namespace troupe::gpu_testing
