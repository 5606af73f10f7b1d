// GPU reductions (Sum, Mean, Max, Min, Prod, SumToShapeOf) and ArgMax against the CPU kernels.
// The GPU engine follows the CPU's summation order, so every comparison here is bit-equal.
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using gpu_testing::AllClose;
using gpu_testing::RunOnBoth;
using testing_util::Make;
using testing_util::Random;

template <typename T>
Tensor RandomInts(TensorShape shape, uint32_t seed, int lo = -5, int hi = 5) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(shape.num_elements()));
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return Make<T>(v, shape);
}

void ExpectBitEqual(const std::string& op, const std::vector<Tensor>& in, const AttrMap& attrs) {
  std::string where = op + " {" + attrs.ToString() + "} on";
  for (const Tensor& t : in)
    where += " " + t.shape().ToString() + std::string(DTypeName(t.dtype()));
  auto r = RunOnBoth(op, in, attrs);
  ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
  ASSERT_EQ((*r).cpu.size(), (*r).gpu.size()) << where;
  for (size_t i = 0; i < (*r).cpu.size(); ++i) {
    const Tensor& c = (*r).cpu[i];
    const Tensor& g = (*r).gpu[i];
    EXPECT_TRUE(c.BitEqual(g)) << where << " output " << i
                               << " not bit-equal: " << AllClose(c, g, 0).message()
                               << " (within 1e-5: " << (AllClose(c, g, 1e-5) ? "yes" : "no")
                               << ")\ncpu " << c.DebugString() << "\ngpu " << g.DebugString();
  }
}

AttrMap Axes(std::vector<int64_t> axes, bool keep = false) {
  return AttrMap{{"axis", axes}, {"keep_dims", keep}};
}

TEST(GpuReductions, LeNetShapes) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectBitEqual("Sum", {Random({64}, 1)}, {});                          // all axes
  ExpectBitEqual("Sum", {Random({64, 120}, 2)}, Axes({0}));              // dense bias gradient
  ExpectBitEqual("Sum", {Random({64, 28, 28, 6}, 3)}, Axes({0, 1, 2}));  // conv bias gradient
  ExpectBitEqual("Mean", {Random({64}, 4)}, {});
  ExpectBitEqual("Sum", {Random({64, 10}, 5)}, Axes({1}, true));
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
        ExpectBitEqual(op, {Random(shape, seed, lo, hi)}, Axes(axes, keep));
        ExpectBitEqual(op, {Random<double>(shape, seed, lo, hi)}, Axes(axes, keep));
        ExpectBitEqual(op, {RandomInts<int32_t>(shape, seed, -3, 3)}, Axes(axes, keep));
        ExpectBitEqual(op, {RandomInts<int64_t>(shape, seed, -3, 3)}, Axes(axes, keep));
        ++seed;
      }
    }
  }
}

TEST(GpuReductions, EmptyInputs) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod"}) {
    ExpectBitEqual(op, {Random({0, 5}, 20)}, Axes({0}));  // identity per column
    ExpectBitEqual(op, {Random({5, 0}, 21)}, Axes({1}));  // identity per row
    ExpectBitEqual(op, {Random({0, 5}, 22)}, Axes({1}));  // empty output
    ExpectBitEqual(op, {RandomInts<int32_t>({4, 0}, 23)}, Axes({1}));
  }
}

TEST(GpuReductions, LargeMultiChunk) {
  TROUPE_SKIP_WITHOUT_GPU();
  // 10M all-reduce: 611 chunks of 16384, combined in order.
  ExpectBitEqual("Sum", {Random({10'000'000}, 30)}, {});
  ExpectBitEqual("Mean", {Random({10'000'000}, 31)}, {});
  ExpectBitEqual("Max", {Random({10'000'000}, 32)}, {});
  // Several long rows (B == 1 with chunks) and a long column reduction (B > 1 with row chunks).
  ExpectBitEqual("Sum", {Random({3, 100'001}, 33)}, Axes({1}));
  ExpectBitEqual("Sum", {Random({100'001, 3}, 34)}, Axes({0}));
  ExpectBitEqual("Sum", {Random({3000, 5000}, 35)}, Axes({0}));  // two column blocks
  ExpectBitEqual("Sum", {RandomInts<int64_t>({5'000'000}, 36)}, {});
  ExpectBitEqual("Prod", {Random({40'000}, 37, 0.999, 1.001)}, {});
}

TEST(GpuReductions, SumToShapeOf) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectBitEqual("SumToShapeOf", {Random({64, 28, 28, 6}, 40), Random({6}, 41)}, {});
  ExpectBitEqual("SumToShapeOf", {Random({64, 120}, 42), Random({120}, 43)}, {});
  ExpectBitEqual("SumToShapeOf", {Random({3, 4, 5}, 44), Random({4, 1}, 45)}, {});
  ExpectBitEqual("SumToShapeOf", {Random({3, 4, 5}, 46), Random({}, 47)}, {});
  ExpectBitEqual("SumToShapeOf", {Random({3, 4, 5}, 48), Random({3, 4, 5}, 49)}, {});
  ExpectBitEqual("SumToShapeOf", {Random({64}, 50), Make<float>({1}, {})}, {});
}

TEST(GpuReductions, ArgMax) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (DType out : {DType::kInt64, DType::kInt32}) {
    const AttrMap last{{"axis", int64_t{1}}, {"output_type", out}};
    ExpectBitEqual("ArgMax", {Random({64, 10}, 60)}, last);             // LeNet predictions
    ExpectBitEqual("ArgMax", {RandomInts<float>({64, 10}, 61)}, last);  // ties: first wins
    ExpectBitEqual("ArgMax", {RandomInts<int32_t>({33, 7}, 62)}, last);
    ExpectBitEqual("ArgMax", {RandomInts<int64_t>({33, 7}, 63)}, last);
    ExpectBitEqual("ArgMax", {Random<double>({5, 9}, 64)}, last);
    ExpectBitEqual("ArgMax", {RandomInts<float>({4, 5, 6}, 65)},
                   AttrMap{{"axis", int64_t{0}}, {"output_type", out}});
    ExpectBitEqual("ArgMax", {RandomInts<float>({4, 5, 6}, 66)},
                   AttrMap{{"axis", int64_t{-2}}, {"output_type", out}});
    // Long rows take the block-per-row kernel; ties everywhere, first max must win.
    ExpectBitEqual("ArgMax", {RandomInts<float>({3, 100'000}, 67, 0, 50)}, last);
    ExpectBitEqual("ArgMax", {Random({2, 1'000'000}, 68)}, last);
  }
  ExpectBitEqual("ArgMax", {RandomInts<float>({0, 4}, 69)}, AttrMap{{"axis", int64_t{1}}});
}

TEST(GpuReductions, DeterministicRunToRun) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor x = Random({10'000'000}, 70);
  auto a = RunOnBoth("Sum", {x});
  auto b = RunOnBoth("Sum", {x});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE((*a).gpu[0].BitEqual((*b).gpu[0]));
  auto c = RunOnBoth("Sum", {Random({100'001, 3}, 71)}, Axes({0}));
  auto d = RunOnBoth("Sum", {Random({100'001, 3}, 71)}, Axes({0}));
  ASSERT_TRUE(c.ok() && d.ok());
  EXPECT_TRUE((*c).gpu[0].BitEqual((*d).gpu[0]));
}

}  // namespace
}  // namespace troupe
