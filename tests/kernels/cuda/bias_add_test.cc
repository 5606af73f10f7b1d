// GPU BiasAdd and BiasAddGrad against the CPU kernels: LeNet shapes, rank 2/4, one and many
// column blocks, many row chunks (two-pass reduction), the conv net's shapes, every dtype, empty
// tensors, determinism.
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

TEST(GpuBiasAdd, LeNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectExact("BiasAdd", {Random({64, 120}, 1), Random({120}, 2)}, {});
  ExpectExact("BiasAdd", {Random({64, 28, 28, 6}, 3), Random({6}, 4)}, {});
  ExpectExact("BiasAdd", {Random({64, 10}, 5), Random({10}, 6)}, {{"data_format", "NHWC"}});
  ExpectLinearClose("BiasAddGrad", {Random({64, 120}, 7)}, {});
  ExpectLinearClose("BiasAddGrad", {Random({64, 28, 28, 6}, 8)}, {});
  ExpectLinearClose("BiasAddGrad", {Random({64, 10, 10, 16}, 9)}, {});
}

// The small conv net's bias gradients (batch 128, 32x32, 32/32/64/64 channels).
TEST(GpuBiasAdd, ConvNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectLinearClose("BiasAddGrad", {Random({128, 32, 32, 32}, 30)}, {});
  ExpectExact("BiasAddGrad", {RandomInts({128, 32, 32, 32}, 31, -3, 3)}, {});
  ExpectLinearClose("BiasAddGrad", {Random({128, 16, 16, 64}, 32)}, {});
  ExpectExact("BiasAddGrad", {RandomInts({128, 16, 16, 64}, 33, -3, 3)}, {});
}

TEST(GpuBiasAdd, ShapesAndChunks) {
  TROUPE_SKIP_WITHOUT_GPU();
  uint32_t seed = 20;
  for (const TensorShape& s :
       {TensorShape({1, 1}), TensorShape({1, 3}), TensorShape({3, 1}), TensorShape({7, 33}),
        TensorShape({40, 1000}), TensorShape({300000, 3}), TensorShape({2, 3, 5, 257}),
        TensorShape({513, 64})}) {
    const int64_t c = s.dim(s.rank() - 1);
    ExpectExact("BiasAdd", {Random(s, seed), Random({c}, seed + 1)}, {});
    ExpectLinearClose("BiasAddGrad", {Random(s, seed + 2)}, {});
    // Integer-valued: exact whatever the summation order.
    ExpectExact("BiasAddGrad", {RandomInts(s, seed + 3, -3, 3)}, {});
    seed += 4;
  }
}

TEST(GpuBiasAdd, EveryDType) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectExact("BiasAdd", {Random<double>({9, 5}, 1), Random<double>({5}, 2)}, {});
  ExpectExact("BiasAdd",
              {RandomInts<int32_t>({9, 5}, 3, -3, 3), RandomInts<int32_t>({5}, 4, -3, 3)}, {});
  ExpectExact("BiasAdd",
              {RandomInts<int64_t>({9, 5}, 5, -3, 3), RandomInts<int64_t>({5}, 6, -3, 3)}, {});
  ExpectLinearClose("BiasAddGrad", {Random<double>({1000, 7}, 7)}, {});
  ExpectExact("BiasAddGrad", {RandomInts<int32_t>({1000, 7}, 8, -3, 3)}, {});
  ExpectExact("BiasAddGrad", {RandomInts<int64_t>({1000, 7}, 9, -3, 3)}, {});
}

TEST(GpuBiasAdd, Empty) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectExact("BiasAdd", {Random({0, 5}, 1), Random({5}, 2)}, {});
  ExpectExact("BiasAddGrad", {Random({0, 4}, 3)}, {});  // zeros
  ExpectExact("BiasAddGrad", {Random({3, 0, 4}, 4)}, {});
  ExpectExact("BiasAddGrad", {Random({3, 0}, 5)}, {});  // empty result
}

TEST(GpuBiasAdd, Deterministic) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectDeterministic("BiasAddGrad", {Random({300000, 3}, 1)}, {});
  ExpectDeterministic("BiasAddGrad", {Random({64, 28, 28, 6}, 2)}, {});
  ExpectDeterministic("BiasAddGrad", {Random({128, 32, 32, 32}, 3)}, {});
}

}  // namespace
}  // namespace troupe::gpu_testing
