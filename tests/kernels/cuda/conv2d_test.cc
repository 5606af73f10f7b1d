// GPU Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (cuDNN) against the CPU kernels:
// LeNet's two conv layers, asymmetric SAME padding (even kernels, stride 2), non-square
// windows and strides, leftover VALID rows, batch 1 and 256, float64, integer-valued inputs
// (exact), empty batches and run-to-run determinism.
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

struct Case {
  TensorShape x, f;
  int64_t sh, sw;
  std::string padding;
};

AttrMap ConvAttrs(const Case& c) {
  return AttrMap{{"strides", std::vector<int64_t>{1, c.sh, c.sw, 1}}, {"padding", c.padding}};
}

// The forward output shape (from the CPU shape function).
TensorShape OutShape(const Case& c) {
  auto op = OpRegistry::Global().LookupOp("Conv2D");
  auto specs = (*op)->infer_shapes(
      std::vector<TensorSpec>{{c.x, DType::kFloat32, ""}, {c.f, DType::kFloat32, ""}},
      ConvAttrs(c));
  EXPECT_TRUE(specs.ok()) << specs.status();
  return specs.ok() ? (*specs)[0].shape : TensorShape({0});
}

// Forward and both gradients of `c` with random (or integer-valued, checked exactly) inputs.
template <typename T = float>
void CheckCase(const Case& c, uint32_t seed, bool ints = false) {
  SCOPED_TRACE("x " + c.x.ToString() + " filter " + c.f.ToString() + " strides " +
               std::to_string(c.sh) + "x" + std::to_string(c.sw) + " " + c.padding);
  auto make = [&](const TensorShape& s, uint32_t sd) {
    return ints ? RandomInts<T>(s, sd, -3, 3) : Random<T>(s, sd);
  };
  Tensor x = make(c.x, seed), f = make(c.f, seed + 1), dy = make(OutShape(c), seed + 2);
  AttrMap a = ConvAttrs(c);
  AttrMap bi = a, bf = a;
  bi.Set("input_sizes", std::vector<int64_t>(c.x.dims().begin(), c.x.dims().end()));
  bf.Set("filter_sizes", std::vector<int64_t>(c.f.dims().begin(), c.f.dims().end()));
  if (ints) {
    ExpectExact("Conv2D", {x, f}, a);
    ExpectExact("Conv2DBackpropInput", {f, dy}, bi);
    ExpectExact("Conv2DBackpropFilter", {x, dy}, bf);
  } else {
    ExpectLinearClose("Conv2D", {x, f}, a);
    ExpectLinearClose("Conv2DBackpropInput", {f, dy}, bi);
    ExpectLinearClose("Conv2DBackpropFilter", {x, dy}, bf);
  }
}

const Case kLeNetConv1{{64, 28, 28, 1}, {5, 5, 1, 6}, 1, 1, "SAME"};
const Case kLeNetConv2{{64, 14, 14, 6}, {5, 5, 6, 16}, 1, 1, "VALID"};

TEST(GpuConv2D, LeNetLayers) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase(kLeNetConv1, 1);
  CheckCase(kLeNetConv2, 4);
}

TEST(GpuConv2D, LeNetLayersExactWithIntegerInputs) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase(kLeNetConv1, 7, true);
  CheckCase(kLeNetConv2, 10, true);
}

TEST(GpuConv2D, AsymmetricSamePadding) {
  TROUPE_SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {
      {{2, 9, 9, 3}, {4, 4, 3, 5}, 2, 2, "SAME"},    // pads 1 top/left, 2 bottom/right
      {{2, 8, 8, 3}, {2, 2, 3, 4}, 1, 1, "SAME"},    // even kernel: 0 before, 1 after
      {{1, 7, 10, 3}, {2, 3, 3, 4}, 1, 1, "SAME"},   // asymmetric in height only
      {{3, 11, 8, 2}, {3, 2, 2, 3}, 1, 2, "SAME"},   // non-square kernel and strides
      {{2, 10, 10, 3}, {3, 3, 3, 2}, 2, 2, "SAME"},  // odd kernel, stride 2: 0 before, 1 after
      {{1, 3, 3, 2}, {5, 5, 2, 2}, 1, 1, "SAME"},    // filter larger than the image
  };
  uint32_t seed = 20;
  for (const Case& c : cases) {
    CheckCase(c, seed);
    CheckCase(c, seed + 3, true);
    seed += 6;
  }
}

TEST(GpuConv2D, ValidStridesAndOddShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {
      {{2, 10, 9, 3}, {3, 3, 3, 4}, 2, 2, "VALID"},  // last row/column unused
      {{1, 5, 7, 1}, {1, 1, 1, 3}, 1, 1, "VALID"},   // 1x1 filter, C=1, batch 1
      {{3, 6, 13, 5}, {2, 4, 5, 7}, 3, 2, "VALID"},
      {{1, 4, 4, 3}, {4, 4, 3, 2}, 1, 1, "VALID"},  // output 1x1
  };
  uint32_t seed = 80;
  for (const Case& c : cases) {
    CheckCase(c, seed);
    CheckCase(c, seed + 3, true);
    seed += 6;
  }
}

TEST(GpuConv2D, LargeBatch) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase({{256, 12, 12, 3}, {3, 3, 3, 8}, 1, 1, "SAME"}, 120);
  CheckCase({{256, 12, 12, 3}, {3, 3, 3, 8}, 2, 2, "SAME"}, 123, true);
}

TEST(GpuConv2D, Float64) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase<double>(kLeNetConv2, 130);
  CheckCase<double>({{2, 9, 9, 3}, {4, 4, 3, 5}, 2, 2, "SAME"}, 133);
}

TEST(GpuConv2D, BackpropInputBatchFromGradient) {
  TROUPE_SKIP_WITHOUT_GPU();
  // input_sizes with batch -1 means "the batch of out_backprop".
  AttrMap a = ConvAttrs(kLeNetConv1);
  a.Set("input_sizes", std::vector<int64_t>{-1, 28, 28, 1});
  ExpectLinearClose("Conv2DBackpropInput",
                    {Random({5, 5, 1, 6}, 140), Random({64, 28, 28, 6}, 141)}, a);
}

TEST(GpuConv2D, EmptyBatch) {
  TROUPE_SKIP_WITHOUT_GPU();
  const Case c{{0, 8, 8, 3}, {3, 3, 3, 4}, 1, 1, "SAME"};
  AttrMap bi = ConvAttrs(c), bf = ConvAttrs(c);
  bi.Set("input_sizes", std::vector<int64_t>{0, 8, 8, 3});
  bf.Set("filter_sizes", std::vector<int64_t>{3, 3, 3, 4});
  ExpectExact("Conv2D", {Random(c.x, 1), Random(c.f, 2)}, ConvAttrs(c));
  ExpectExact("Conv2DBackpropInput", {Random(c.f, 2), Random({0, 8, 8, 4}, 3)}, bi);
  // Nothing to sum: a zero filter gradient.
  ExpectExact("Conv2DBackpropFilter", {Random(c.x, 1), Random({0, 8, 8, 4}, 3)}, bf);
}

TEST(GpuConv2D, Deterministic) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (const Case& c : {kLeNetConv1, kLeNetConv2, Case{{8, 9, 9, 3}, {4, 4, 3, 5}, 2, 2, "SAME"}}) {
    AttrMap a = ConvAttrs(c), bi = a, bf = a;
    bi.Set("input_sizes", std::vector<int64_t>(c.x.dims().begin(), c.x.dims().end()));
    bf.Set("filter_sizes", std::vector<int64_t>(c.f.dims().begin(), c.f.dims().end()));
    Tensor x = Random(c.x, 150), f = Random(c.f, 151), dy = Random(OutShape(c), 152);
    ExpectDeterministic("Conv2D", {x, f}, a);
    ExpectDeterministic("Conv2DBackpropInput", {f, dy}, bi);
    ExpectDeterministic("Conv2DBackpropFilter", {x, dy}, bf);
  }
}

}  // namespace
}  // namespace troupe::gpu_testing
