// GPU MatMul (cuBLAS) against the CPU kernel: LeNet's dense layers and their gradients, every
// transpose combination, odd and large sizes, empty dims, float64, and run-to-run determinism.
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

AttrMap Trans(bool ta, bool tb) { return AttrMap{{"transpose_a", ta}, {"transpose_b", tb}}; }

// Operands of an m x k by k x n product stored as the transpose flags say.
template <typename T = float>
std::vector<Tensor> Operands(int64_t m, int64_t k, int64_t n, bool ta, bool tb, uint32_t seed,
                             bool ints = false) {
  const TensorShape a = ta ? TensorShape({k, m}) : TensorShape({m, k});
  const TensorShape b = tb ? TensorShape({n, k}) : TensorShape({k, n});
  if (ints) return {RandomInts<T>(a, seed, -4, 4), RandomInts<T>(b, seed + 1, -4, 4)};
  return {Random<T>(a, seed), Random<T>(b, seed + 1)};
}

TEST(GpuMatMul, LeNetDenseLayersAndGradients) {
  TROUPE_SKIP_WITHOUT_GPU();
  const int64_t batch = 64;
  uint32_t seed = 1;
  for (auto [in, out] : std::vector<std::pair<int64_t, int64_t>>{{400, 120}, {120, 84}, {84, 10}}) {
    Tensor x = Random({batch, in}, seed++), w = Random({in, out}, seed++);
    Tensor dy = Random({batch, out}, seed++);
    ExpectLinearClose("MatMul", {x, w}, Trans(false, false));  // forward
    ExpectLinearClose("MatMul", {dy, w}, Trans(false, true));  // d x = dy · wᵀ
    ExpectLinearClose("MatMul", {x, dy}, Trans(true, false));  // d w = xᵀ · dy
  }
}

TEST(GpuMatMul, EveryTransposeCombination) {
  TROUPE_SKIP_WITHOUT_GPU();
  struct Size {
    int64_t m, k, n;
  };
  uint32_t seed = 100;
  for (Size s : {Size{1, 1, 1}, Size{33, 65, 17}, Size{17, 1, 33}, Size{2, 300, 3}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        ExpectLinearClose("MatMul", Operands(s.m, s.k, s.n, ta, tb, seed), Trans(ta, tb));
        ExpectExact("MatMul", Operands(s.m, s.k, s.n, ta, tb, seed, true), Trans(ta, tb));
        ExpectLinearClose("MatMul", Operands<double>(s.m, s.k, s.n, ta, tb, seed), Trans(ta, tb));
        seed += 2;
      }
    }
  }
}

TEST(GpuMatMul, Large1024) {
  TROUPE_SKIP_WITHOUT_GPU();
  uint32_t seed = 200;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      // Integer values: every order of summation gives the same exact result.
      ExpectExact("MatMul", Operands(1024, 1024, 1024, ta, tb, seed, true), Trans(ta, tb));
      seed += 2;
    }
  }
  ExpectLinearClose("MatMul", Operands(1024, 1024, 1024, false, false, seed), Trans(false, false));
  ExpectLinearClose("MatMul", Operands(1000, 1030, 1001, true, true, seed + 2), Trans(true, true));
}

TEST(GpuMatMul, EmptyDims) {
  TROUPE_SKIP_WITHOUT_GPU();
  // k == 0: zeros (the GPU output buffer is not pre-zeroed, so this checks the fill).
  ExpectExact("MatMul", {Random({3, 0}, 1), Random({0, 4}, 2)}, Trans(false, false));
  ExpectExact("MatMul", {Random({0, 3}, 1), Random({4, 0}, 2)}, Trans(true, true));
  ExpectExact("MatMul", {Random({0, 5}, 1), Random({5, 4}, 2)}, Trans(false, false));
  ExpectExact("MatMul", {Random({3, 5}, 1), Random({5, 0}, 2)}, Trans(false, false));
}

TEST(GpuMatMul, Deterministic) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectDeterministic("MatMul", Operands(1024, 1024, 1024, false, false, 300), Trans(false, false));
  ExpectDeterministic("MatMul", Operands(64, 400, 120, true, false, 302), Trans(true, false));
}

TEST(GpuMatMul, BadShapesGiveTheCpuError) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto a = gpu::CopyTo(Random({2, 3}, 1), Device::Gpu(0));
  auto b = gpu::CopyTo(Random({4, 5}, 2), Device::Gpu(0));
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = RunOp("MatMul", std::vector<Tensor>{*a, *b}, {}, Device::Gpu(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("inner dimensions differ"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace troupe::gpu_testing
