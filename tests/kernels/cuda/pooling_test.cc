// GPU MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad against the CPU kernels: LeNet's pools,
// SAME padding (partial windows), overlapping windows, non-square windows and strides, batch 1
// and 256, ties (the first maximum gets the gradient), float64, empty batch, determinism.
// MaxPool/MaxPoolGrad select and add in the CPU's order, so they must be bit-equal.
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::gpu_testing {
namespace {

struct Case {
  TensorShape x;
  int64_t kh, kw, sh, sw;
  std::string padding;
};

AttrMap PoolAttrs(const Case& c) {
  return AttrMap{{"ksize", std::vector<int64_t>{1, c.kh, c.kw, 1}},
                 {"strides", std::vector<int64_t>{1, c.sh, c.sw, 1}},
                 {"padding", c.padding}};
}

// Checks all four ops on `x`; returns nothing but records failures with the case in the trace.
template <typename T = float>
void CheckCase(const Case& c, const Tensor& x, uint32_t seed) {
  SCOPED_TRACE("x " + c.x.ToString() + " ksize " + std::to_string(c.kh) + "x" +
               std::to_string(c.kw) + " strides " + std::to_string(c.sh) + "x" +
               std::to_string(c.sw) + " " + c.padding);
  const AttrMap a = PoolAttrs(c);
  ExpectExact("MaxPool", {x}, a);
  ExpectLinearClose("AvgPool", {x}, a);
  auto y = RunOp1("MaxPool", std::vector<Tensor>{x}, a);
  ASSERT_TRUE(y.ok()) << y.status();
  Tensor dy = Random<T>(y->shape(), seed);
  ExpectExact("MaxPoolGrad", {x, *y, dy}, a);
  AttrMap ag = a;
  ag.Set("orig_input_shape", std::vector<int64_t>(c.x.dims().begin(), c.x.dims().end()));
  ExpectLinearClose("AvgPoolGrad", {dy}, ag);
  ag.Set("orig_input_shape",
         std::vector<int64_t>{-1, c.x.dim(1), c.x.dim(2), c.x.dim(3)});  // batch from grad
  ExpectLinearClose("AvgPoolGrad", {dy}, ag);
}

template <typename T = float>
void CheckCase(const Case& c, uint32_t seed) {
  CheckCase<T>(c, Random<T>(c.x, seed), seed + 1);
}

TEST(GpuPooling, LeNetPools) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase({{64, 28, 28, 6}, 2, 2, 2, 2, "VALID"}, 1);
  CheckCase({{64, 10, 10, 16}, 2, 2, 2, 2, "VALID"}, 3);
}

TEST(GpuPooling, PaddingStridesAndShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {
      {{2, 7, 9, 3}, 3, 3, 2, 2, "SAME"},    // partial windows at every border
      {{2, 8, 8, 3}, 2, 2, 1, 1, "SAME"},    // even window: pad only bottom/right
      {{2, 9, 9, 4}, 3, 3, 1, 1, "SAME"},    // overlapping: up to 9 windows per input
      {{1, 6, 11, 2}, 2, 3, 1, 2, "VALID"},  // non-square window and strides
      {{3, 10, 7, 5}, 4, 2, 3, 1, "VALID"},  // unused trailing rows
      {{1, 5, 5, 1}, 5, 5, 1, 1, "VALID"},   // one window over everything, C=1
      {{2, 4, 4, 3}, 6, 6, 3, 3, "SAME"},    // window larger than the image
      {{256, 8, 8, 3}, 2, 2, 2, 2, "SAME"},  // large batch
  };
  uint32_t seed = 10;
  for (const Case& c : cases) {
    CheckCase(c, seed);
    seed += 2;
  }
}

TEST(GpuPooling, TiesGoToTheFirstMaximum) {
  TROUPE_SKIP_WITHOUT_GPU();
  // Constant input: every window ties; overlapping windows make the first-max rule visible.
  for (const Case& c :
       {Case{{2, 6, 6, 3}, 3, 3, 1, 1, "SAME"}, Case{{1, 7, 5, 2}, 2, 2, 2, 2, "SAME"},
        Case{{2, 5, 5, 1}, 3, 3, 2, 2, "VALID"}}) {
    std::vector<float> ones(static_cast<size_t>(c.x.num_elements()), 1.f);
    CheckCase(c, Make<float>(ones, c.x), 40);
  }
  // Ties between a few values (integers in [0, 2]).
  Case c{{2, 9, 9, 3}, 3, 3, 1, 1, "SAME"};
  CheckCase(c, RandomInts<float>(c.x, 41, 0, 2), 42);
}

TEST(GpuPooling, Float64) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase<double>({{4, 9, 9, 3}, 3, 3, 2, 2, "SAME"}, 50);
}

TEST(GpuPooling, EmptyBatch) {
  TROUPE_SKIP_WITHOUT_GPU();
  CheckCase({{0, 4, 4, 3}, 2, 2, 2, 2, "VALID"}, 60);
}

TEST(GpuPooling, Deterministic) {
  TROUPE_SKIP_WITHOUT_GPU();
  const Case c{{16, 9, 9, 4}, 3, 3, 1, 1, "SAME"};
  const AttrMap a = PoolAttrs(c);
  Tensor x = Random(c.x, 70);
  auto y = RunOp1("MaxPool", std::vector<Tensor>{x}, a);
  ASSERT_TRUE(y.ok());
  Tensor dy = Random(y->shape(), 71);
  AttrMap ag = a;
  ag.Set("orig_input_shape", std::vector<int64_t>(c.x.dims().begin(), c.x.dims().end()));
  ExpectDeterministic("MaxPool", {x}, a);
  ExpectDeterministic("AvgPool", {x}, a);
  ExpectDeterministic("MaxPoolGrad", {x, *y, dy}, a);
  ExpectDeterministic("AvgPoolGrad", {dy}, ag);
}

}  // namespace
}  // namespace troupe::gpu_testing
