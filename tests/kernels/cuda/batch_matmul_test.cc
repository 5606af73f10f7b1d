// GPU BatchMatMulV2 (cuBLAS) against the CPU kernel: the transformer's attention products and
// their gradients (every adj_x/adj_y combination), broadcast batch dims (the strided-batched
// path and the per-batch path), size-1 and empty dims, float64, run-to-run determinism and the
// CPU's shape errors. Random floats are judged against the |inputs| product (ExpectLinearClose);
// integer-valued inputs must give the CPU's values (±0 aside), zero fills and empty outputs its
// bits.
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

constexpr char kOp[] = "BatchMatMulV2";

AttrMap Adj(bool ax, bool ay) { return AttrMap{{"adj_x", ax}, {"adj_y", ay}}; }

// x [..., m, k] (stored [..., k, m] with adj_x) and y [..., k, n] (stored [..., n, k] with adj_y).
template <typename T = float>
std::vector<Tensor> Operands(std::vector<int64_t> bx, std::vector<int64_t> by, int64_t m, int64_t k,
                             int64_t n, bool ax, bool ay, uint32_t seed, bool ints = false) {
  std::vector<int64_t> xs = bx, ys = by;
  xs.insert(xs.end(), {ax ? k : m, ax ? m : k});
  ys.insert(ys.end(), {ay ? n : k, ay ? k : n});
  if (ints) {
    return {RandomInts<T>(TensorShape(xs), seed, -4, 4),
            RandomInts<T>(TensorShape(ys), seed + 1, -4, 4)};
  }
  return {Random<T>(TensorShape(xs), seed), Random<T>(TensorShape(ys), seed + 1)};
}

// Integer-valued inputs: the same values as the CPU (exact sums in any order). Not bit-equal: a
// product that is exactly zero can come back as -0 (cuBLAS writes x·y with beta = 0 where the
// CPU adds the products to +0).
void ExpectSameValues(const std::vector<Tensor>& in, const AttrMap& attrs) {
  ForEachOutput(kOp, in, attrs,
                [](size_t i, const Tensor& c, const Tensor& g, const std::string& where) {
                  EXPECT_TRUE(AllClose(c, g, 0)) << where << " output " << i;
                });
}

// Both checks for one product: random floats near the CPU, integer values equal.
void Check(std::vector<int64_t> bx, std::vector<int64_t> by, int64_t m, int64_t k, int64_t n,
           bool ax, bool ay, uint32_t seed) {
  ExpectLinearClose(kOp, Operands(bx, by, m, k, n, ax, ay, seed), Adj(ax, ay));
  ExpectSameValues(Operands(bx, by, m, k, n, ax, ay, seed + 2, true), Adj(ax, ay));
}

TEST(GpuBatchMatMul, TransformerAttentionAndGradients) {
  TROUPE_SKIP_WITHOUT_GPU();
  // B=12, 4 heads, T=64, 32 per head: logits = q kᵀ, out = p v, and their gradients.
  const std::vector<int64_t> b = {12, 4};
  Check(b, b, 64, 32, 64, false, true, 1);   // logits = q · kᵀ
  Check(b, b, 64, 64, 32, false, false, 5);  // out = p · v; d q = d logits · k
  Check(b, b, 64, 64, 32, true, false, 9);   // d k = d logitsᵀ · q; d v = pᵀ · d out
  Check(b, b, 64, 32, 64, false, true, 13);  // d p = d out · vᵀ
  Check(b, b, 64, 32, 64, true, true, 17);
}

TEST(GpuBatchMatMul, EveryAdjCombinationOddSizes) {
  TROUPE_SKIP_WITHOUT_GPU();
  uint32_t seed = 100;
  for (bool ax : {false, true}) {
    for (bool ay : {false, true}) {
      Check({3}, {3}, 17, 33, 5, ax, ay, seed);
      Check({}, {}, 7, 9, 11, ax, ay, seed + 4);  // rank 2: one matrix
      ExpectLinearClose(kOp, Operands<double>({2, 3}, {2, 3}, 13, 21, 6, ax, ay, seed + 8),
                        Adj(ax, ay));
      seed += 16;
    }
  }
}

TEST(GpuBatchMatMul, BroadcastBatchDims) {
  TROUPE_SKIP_WITHOUT_GPU();
  uint32_t seed = 200;
  for (bool ax : {false, true}) {
    for (bool ay : {false, true}) {
      Check({3, 2}, {}, 4, 5, 6, ax, ay, seed);           // y one matrix: stride 0
      Check({}, {3, 2}, 4, 5, 6, ax, ay, seed + 4);       // x one matrix
      Check({1, 2}, {3, 2}, 4, 5, 6, ax, ay, seed + 8);   // leading 1: still one stride
      Check({2, 1}, {1, 3}, 4, 5, 6, ax, ay, seed + 12);  // outer product: one GEMM per batch
      Check({2, 1, 3}, {4, 1}, 3, 2, 5, ax, ay, seed + 16);
      seed += 20;
    }
  }
}

TEST(GpuBatchMatMul, SizeOneAndEmptyDims) {
  TROUPE_SKIP_WITHOUT_GPU();
  Check({5}, {5}, 1, 1, 1, false, false, 300);
  Check({5}, {5}, 1, 8, 1, true, true, 304);
  Check({1}, {1}, 9, 1, 7, false, true, 308);
  // k == 0: zeros (the GPU output buffer is not pre-zeroed, so this checks the fill).
  ExpectExact(kOp, Operands({2, 3}, {2, 3}, 4, 0, 5, false, false, 312), Adj(false, false));
  ExpectExact(kOp, Operands({2}, {1}, 4, 0, 5, true, true, 314), Adj(true, true));
  // Empty output: no batches, no rows or no columns.
  ExpectExact(kOp, Operands({0}, {0}, 4, 3, 5, false, false, 316), Adj(false, false));
  ExpectExact(kOp, Operands({0}, {1}, 4, 3, 5, false, false, 318), Adj(false, false));
  ExpectExact(kOp, Operands({2}, {2}, 0, 3, 5, false, false, 320), Adj(false, false));
  ExpectExact(kOp, Operands({2}, {2}, 4, 3, 0, true, true, 322), Adj(true, true));
}

TEST(GpuBatchMatMul, Deterministic) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectDeterministic(kOp, Operands({12, 4}, {12, 4}, 64, 32, 64, false, true, 400),
                      Adj(false, true));
  ExpectDeterministic(kOp, Operands({2, 1}, {1, 3}, 40, 300, 50, true, false, 402),
                      Adj(true, false));
}

TEST(GpuBatchMatMul, BadShapesGiveTheCpuError) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto run = [](const Tensor& x, const Tensor& y) {
    auto a = gpu::CopyTo(x, Device::Gpu(0));
    auto b = gpu::CopyTo(y, Device::Gpu(0));
    EXPECT_TRUE(a.ok() && b.ok());
    return RunOp(kOp, std::vector<Tensor>{*a, *b}, {}, Device::Gpu(0)).status();
  };
  Status s = run(Random({2, 2, 3}, 1), Random({2, 4, 5}, 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("inner dimensions differ"), std::string::npos) << s;
  s = run(Random({2, 2, 3}, 1), Random({3, 3, 5}, 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("do not broadcast"), std::string::npos) << s;
}

}  // namespace
}  // namespace troupe::gpu_testing
