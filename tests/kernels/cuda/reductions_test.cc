// GPU reductions (Sum, Mean, Max, Min, Prod, SumToShapeOf) and ArgMax against the CPU kernels.
// The GPU sums in its own fixed tree order, so float Sum/Mean/SumToShapeOf are judged against
// 1e-5 of the same reduction of |x|, float Prod at 1e-5 relative; Max/Min/ArgMax, integers and
// integer-valued floats (exact sums in any order) must be bit-equal, which catches any indexing
// bug. Shapes cross every threshold of the engine (serial, warp, chunked rows, column tiles,
// chunk caps, second pass), and the engine must give the same bits run after run.
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using gpu_testing::AllClose;
using gpu_testing::Coords;
using gpu_testing::ExpectDeterministic;
using gpu_testing::Get;
using gpu_testing::RunOnBoth;
using testing_util::Make;
using testing_util::Random;
using testing_util::RandomInts;

// Float sums within tolerance, everything else bit-equal (see the file comment).
void ExpectMatchesCpu(const std::string& op, const std::vector<Tensor>& in, const AttrMap& attrs) {
  gpu_testing::ForEachOutput(
      op, in, attrs, [&](size_t i, const Tensor& c, const Tensor& g, const std::string& where) {
        // Float sums follow their own fixed order on each device (deterministic, not the same
        // order): 1e-5 of the result's scale. Max/Min/ArgMax and integers are exact.
        const bool summed = (op == "Sum" || op == "Mean" || op == "Prod" || op == "SumToShapeOf") &&
                            (c.dtype() == DType::kFloat32 || c.dtype() == DType::kFloat64);
        if (summed && op != "Prod") {
          // Judged against the same reduction of |x| (a sum's rounding scales with it).
          std::vector<Tensor> abs_in;
          for (const Tensor& t : in) abs_in.push_back(*RunOp1("Abs", std::vector<Tensor>{t}));
          auto ref = RunOp(op, abs_in, attrs, Device::Cpu());
          ASSERT_TRUE(ref.ok()) << where << ": " << ref.status().ToString();
          EXPECT_TRUE(gpu_testing::CloseToAbsRef(c, g, (*ref)[i], 1e-5))
              << where << " output " << i;
          return;
        }
        if (summed) {
          EXPECT_TRUE(AllClose(c, g, 1e-5)) << where << " output " << i;
          return;
        }
        EXPECT_TRUE(gpu_testing::BitEqual(c, g))
            << where << " output " << i
            << " (within 1e-5: " << (AllClose(c, g, 1e-5) ? "yes" : "no") << ")";
      });
}

// Bit-equal to the CPU whatever the op and dtype (integer-valued inputs); names the first
// differing element's coordinates.
void ExpectExactly(const std::string& op, const std::vector<Tensor>& in, const AttrMap& attrs) {
  const std::string where = gpu_testing::Describe(op, in, attrs);
  auto r = RunOnBoth(op, in, attrs);
  ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
  ASSERT_EQ((*r).cpu.size(), (*r).gpu.size()) << where;
  for (size_t i = 0; i < (*r).cpu.size(); ++i) {
    const Tensor& c = (*r).cpu[i];
    const Tensor& g = (*r).gpu[i];
    ASSERT_EQ(c.shape(), g.shape()) << where;
    if (c.BitEqual(g)) continue;
    int64_t bad = 0, first = -1;
    for (int64_t e = 0; e < c.num_elements(); ++e) {
      if (Get(c, e) != Get(g, e) && bad++ == 0) first = e;
    }
    if (bad == 0) {
      ADD_FAILURE() << where << " output " << i << ": bits differ (sign of zero or NaN)";
      continue;
    }
    ADD_FAILURE() << where << " output " << i << ": " << bad << " of " << c.num_elements()
                  << " elements differ; first at " << Coords(c.shape(), first) << ": cpu "
                  << Get(c, first) << " gpu " << Get(g, first);
  }
}

AttrMap Axes(std::vector<int64_t> axes, bool keep = false) {
  return AttrMap{{"axis", axes}, {"keep_dims", keep}};
}

TEST(GpuReductions, LeNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectMatchesCpu("Sum", {Random({64}, 1)}, {});                          // all axes
  ExpectMatchesCpu("Sum", {Random({64, 120}, 2)}, Axes({0}));              // dense bias gradient
  ExpectMatchesCpu("Sum", {Random({64, 28, 28, 6}, 3)}, Axes({0, 1, 2}));  // conv bias gradient
  ExpectMatchesCpu("Mean", {Random({64}, 4)}, {});
  ExpectMatchesCpu("Sum", {Random({64, 10}, 5)}, Axes({1}, true));
}

TEST(GpuReductions, EveryReducerAndDType) {
  TROUPE_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<TensorShape, std::vector<int64_t>>> cases = {
      {{3, 4, 5, 6}, {0, 2}},  // non-adjacent: transposed first
      {{3, 4, 5, 6}, {1}},    {{3, 4, 5, 6}, {3}},    {{3, 4, 5, 6}, {0}},
      {{3, 4, 5, 6}, {1, 3}}, {{3, 1, 5, 1}, {1, 3}}, {{7}, {0}},
      {{2, 3}, {}},           {{1, 1}, {0, 1}},       {{5, 1, 7}, {-1}}};
  uint32_t seed = 10;
  for (const auto& [shape, axes] : cases) {
    for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod"}) {
      for (bool keep : {false, true}) {
        const double lo = std::string(op) == "Prod" ? 0.5 : -3;
        const double hi = std::string(op) == "Prod" ? 1.5 : 3;
        ExpectMatchesCpu(op, {Random(shape, seed, lo, hi)}, Axes(axes, keep));
        ExpectMatchesCpu(op, {Random<double>(shape, seed, lo, hi)}, Axes(axes, keep));
        ExpectMatchesCpu(op, {RandomInts<int32_t>(shape, seed, -3, 3)}, Axes(axes, keep));
        ExpectMatchesCpu(op, {RandomInts<int64_t>(shape, seed, -3, 3)}, Axes(axes, keep));
        ++seed;
      }
    }
  }
}

TEST(GpuReductions, EmptyInputs) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod"}) {
    ExpectMatchesCpu(op, {Random({0, 5}, 20)}, Axes({0}));  // identity per column
    ExpectMatchesCpu(op, {Random({5, 0}, 21)}, Axes({1}));  // identity per row
    ExpectMatchesCpu(op, {Random({0, 5}, 22)}, Axes({1}));  // empty output
    ExpectMatchesCpu(op, {RandomInts<int32_t>({4, 0}, 23)}, Axes({1}));
  }
}

TEST(GpuReductions, LargeMultiChunk) {
  TROUPE_SKIP_WITHOUT_GPU();
  // 10M all-reduce: over 1024 chunks of 8192, so chunks grow to 9984 (1002 chunks, then a
  // warp combines the partials).
  ExpectMatchesCpu("Sum", {Random({10'000'000}, 30)}, {});
  ExpectMatchesCpu("Mean", {Random({10'000'000}, 31)}, {});
  ExpectMatchesCpu("Max", {Random({10'000'000}, 32)}, {});
  ExpectExactly("Sum", {RandomInts<float>({10'000'000}, 38)}, {});
  // Several long rows (chunked rows) and a long column reduction (row chunks of 3 columns).
  ExpectMatchesCpu("Sum", {Random({3, 100'001}, 33)}, Axes({1}));
  ExpectMatchesCpu("Sum", {Random({100'001, 3}, 34)}, Axes({0}));
  ExpectExactly("Sum", {RandomInts<float>({100'001, 3}, 39)}, Axes({0}));
  ExpectMatchesCpu("Min", {Random({100'001, 3}, 40)}, Axes({0}));
  ExpectMatchesCpu("Sum", {Random({3000, 5000}, 35)}, Axes({0}));  // 20 column tiles
  ExpectMatchesCpu("Sum", {RandomInts<int64_t>({5'000'000}, 36)}, {});
  // Two chunks; the rounding of 9000 products (either order) stays well inside 1e-5.
  ExpectMatchesCpu("Prod", {Random({9000}, 37, 0.999, 1.001)}, {});
}

// Products of +-1 with a few 2 and 0.5 (0.1% each) are exact in any order (the exponent stays far
// from the range's ends), so a reordered Prod must still be bit-equal.
Tensor ExactProdInput(TensorShape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, 999);
  std::vector<float> v(static_cast<size_t>(shape.num_elements()));
  for (auto& x : v) {
    const int k = dist(gen);
    x = k == 0 ? 2.0f : k == 1 ? 0.5f : (k % 2 ? -1.0f : 1.0f);
  }
  return Make<float>(v, shape);
}

TEST(GpuReductions, ExactProd) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectExactly("Prod", {ExactProdInput({40'000}, 90)}, {});
  ExpectExactly("Prod", {ExactProdInput({20'000, 3}, 91)}, Axes({0}));
  ExpectExactly("Prod", {ExactProdInput({7, 3000}, 92)}, Axes({1}));
}

// Every path of the engine with integer-valued floats (exact sums in any order, so bit-equal
// to the CPU) and with ints; Sum, Mean, Max and Min. x viewed as [A, R, B].
TEST(GpuReductions, EveryPathExact) {
  TROUPE_SKIP_WITHOUT_GPU();
  struct Case {
    TensorShape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {
      {{5, 16}, {1}},                // serial rows (R <= 16)
      {{9, 17}, {1}},                // one warp per row
      {{3, 1024}, {1}},              // warp, longest
      {{3, 1025}, {1}},              // one block per row, one chunk
      {{2, 8192}, {1}},              // one chunk exactly
      {{2, 8193}, {1}},              // two chunks, serial second pass
      {{2, 300'000}, {1}},           // 37 chunks, warp second pass
      {{1000, 33}, {1}},             // many warp rows
      {{16, 7}, {0}},                // serial columns
      {{17, 2}, {0}},                // B = 2: 128 row lanes
      {{5000, 3}, {0}},              // B = 3: 85 lanes, several chunks
      {{64, 28, 28, 6}, {0, 1, 2}},  // LeNet conv1 bias gradient
      {{64, 10, 10, 16}, {0, 1, 2}},
      {{2000, 129}, {0}},         // B > 128: one lane
      {{300, 256}, {0}},          // one full tile
      {{300, 257}, {0}},          // two tiles, the second with one column
      {{40, 1000}, {0}},          // four tiles
      {{7, 100, 5}, {1}},         // A > 1 columns
      {{6, 5000, 7}, {1}},        // A > 1 columns, several chunks
      {{4, 3, 5000}, {1}},        // A > 1, wide B, short R
      {{8, 20, 5}, {0, 2}},       // transposed first
      {{16, 16, 16, 8}, {1, 2}},  // spatial mean of NHWC
  };
  uint32_t seed = 100;
  for (const Case& c : cases) {
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
      ExpectExactly(op, {RandomInts<float>(c.shape, seed++)}, Axes(c.axes));
      ExpectExactly(op, {RandomInts<int32_t>(c.shape, seed++)}, Axes(c.axes));
    }
    ExpectExactly("Sum", {RandomInts<int64_t>(c.shape, seed++)}, Axes(c.axes, true));
    ExpectExactly("Sum", {RandomInts<double>(c.shape, seed++)}, Axes(c.axes));
    ExpectMatchesCpu("Sum", {Random(c.shape, seed++)}, Axes(c.axes));
    ExpectMatchesCpu("Mean", {Random<double>(c.shape, seed++)}, Axes(c.axes));
  }
}

// The small conv net's gradients (batch 128, 32x32, 32/32/64/64 channels).
TEST(GpuReductions, ConvNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectMatchesCpu("Sum", {Random({128, 32, 32, 32}, 80)}, Axes({0, 1, 2}));
  ExpectExactly("Sum", {RandomInts<float>({128, 32, 32, 32}, 81)}, Axes({0, 1, 2}));
  ExpectMatchesCpu("SumToShapeOf", {Random({128, 32, 32, 32}, 82), Random({32}, 83)}, {});
  ExpectExactly("SumToShapeOf", {RandomInts<float>({128, 16, 16, 64}, 84), Random({64}, 85)}, {});
  ExpectMatchesCpu("SumToShapeOf", {Random({128, 16, 16, 64}, 86), Random({64}, 87)}, {});
  ExpectMatchesCpu("Mean", {Random({128, 10}, 88)}, {});
}

TEST(GpuReductions, SumToShapeOf) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectMatchesCpu("SumToShapeOf", {Random({64, 28, 28, 6}, 40), Random({6}, 41)}, {});
  ExpectMatchesCpu("SumToShapeOf", {Random({64, 120}, 42), Random({120}, 43)}, {});
  ExpectMatchesCpu("SumToShapeOf", {Random({3, 4, 5}, 44), Random({4, 1}, 45)}, {});
  ExpectMatchesCpu("SumToShapeOf", {Random({3, 4, 5}, 46), Random({}, 47)}, {});
  ExpectMatchesCpu("SumToShapeOf", {Random({3, 4, 5}, 48), Random({3, 4, 5}, 49)}, {});
  ExpectMatchesCpu("SumToShapeOf", {Random({64}, 50), Make<float>({1}, {})}, {});
}

TEST(GpuReductions, ArgMax) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (DType out : {DType::kInt64, DType::kInt32}) {
    const AttrMap last{{"axis", int64_t{1}}, {"output_type", out}};
    ExpectMatchesCpu("ArgMax", {Random({64, 10}, 60)}, last);             // LeNet predictions
    ExpectMatchesCpu("ArgMax", {RandomInts<float>({64, 10}, 61)}, last);  // ties: first wins
    ExpectMatchesCpu("ArgMax", {RandomInts<int32_t>({33, 7}, 62)}, last);
    ExpectMatchesCpu("ArgMax", {RandomInts<int64_t>({33, 7}, 63)}, last);
    ExpectMatchesCpu("ArgMax", {Random<double>({5, 9}, 64)}, last);
    ExpectMatchesCpu("ArgMax", {RandomInts<float>({4, 5, 6}, 65)},
                     AttrMap{{"axis", int64_t{0}}, {"output_type", out}});
    ExpectMatchesCpu("ArgMax", {RandomInts<float>({4, 5, 6}, 66)},
                     AttrMap{{"axis", int64_t{-2}}, {"output_type", out}});
    // Long rows take the block-per-row kernel; ties everywhere, first max must win.
    ExpectMatchesCpu("ArgMax", {RandomInts<float>({3, 100'000}, 67, 0, 50)}, last);
    ExpectMatchesCpu("ArgMax", {Random({2, 1'000'000}, 68)}, last);
  }
  ExpectMatchesCpu("ArgMax", {RandomInts<float>({0, 4}, 69)}, AttrMap{{"axis", int64_t{1}}});
}

TEST(GpuReductions, DeterministicRunToRun) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectDeterministic("Sum", {Random({10'000'000}, 70)}, {});
  ExpectDeterministic("Sum", {Random({100'001, 3}, 71)}, Axes({0}));
  ExpectDeterministic("Sum", {Random({128, 32, 32, 32}, 72)}, Axes({0, 1, 2}));
  ExpectDeterministic("Mean", {Random({3, 100'001}, 73)}, Axes({1}));
  ExpectDeterministic("SumToShapeOf", {Random({64, 28, 28, 6}, 74), Random({6}, 75)}, {});
}

}  // namespace
}  // namespace troupe
