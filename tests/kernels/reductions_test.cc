// Sum/Mean/Max/Min/Prod over axis sets vs a naive float64 reference, keep_dims, broadcast
// gradient helpers (BroadcastGradientArgs, SumToShapeOf), errors, and determinism.
#include <cmath>
#include <set>

#include "kernels/kernel_util.h"
#include "kernels/reductions.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT

Tensor NaiveReduce(const Tensor& x, std::set<int> axes, const std::string& op) {
  std::vector<int64_t> out_dims;
  for (int d = 0; d < x.rank(); ++d) {
    if (!axes.count(d)) out_dims.push_back(x.dim(d));
  }
  TensorShape os(out_dims);
  std::vector<double> acc(static_cast<size_t>(os.num_elements()), op == "Max"    ? -INFINITY
                                                                  : op == "Min"  ? INFINITY
                                                                  : op == "Prod" ? 1
                                                                                 : 0);
  std::vector<int64_t> count(acc.size(), 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    int64_t rem = i, o = 0, mul = 1;
    for (int d = x.rank(); d-- > 0;) {
      int64_t id = rem % x.dim(d);
      rem /= x.dim(d);
      if (!axes.count(d)) {
        o += id * mul;
        mul *= x.dim(d);
      }
    }
    double v = x.data<float>()[i];
    auto& a = acc[static_cast<size_t>(o)];
    if (op == "Max")
      a = std::max(a, v);
    else if (op == "Min")
      a = std::min(a, v);
    else if (op == "Prod")
      a *= v;
    else
      a += v;
    count[static_cast<size_t>(o)]++;
  }
  Tensor y = *Tensor::Allocate(DType::kFloat32, os);
  for (size_t i = 0; i < acc.size(); ++i) {
    y.data<float>()[i] = static_cast<float>(op == "Mean" ? acc[i] / count[i] : acc[i]);
  }
  return y;
}

TEST(ReductionsTest, MatchNaiveForAxisSets) {
  struct Case {
    TensorShape shape;
    std::vector<int64_t> axes;
  };
  std::vector<Case> cases = {{{5}, {0}},
                             {{3, 4}, {0}},
                             {{3, 4}, {1}},
                             {{3, 4}, {0, 1}},
                             {{2, 3, 4}, {1}},
                             {{2, 3, 4}, {0, 2}},
                             {{2, 3, 4}, {2, 0}},
                             {{2, 1, 4}, {1}},
                             {{2, 3, 4, 5}, {1, 3}},
                             {{100000}, {0}},
                             {{40000, 3}, {0}},
                             {{3, 40000}, {1}},
                             {{8, 5, 5, 6}, {0, 1, 2}},
                             {{4, 5}, {-1}},
                             {{6, 7, 9000}, {0, 1}}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    Tensor x = Random(c.shape, seed++, 0.5, 1.0);
    std::set<int> axes;
    for (int64_t a : c.axes) axes.insert(static_cast<int>(a < 0 ? a + c.shape.rank() : a));
    for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod"}) {
      if (std::string(op) == "Prod" && c.shape.num_elements() > 100) continue;
      SCOPED_TRACE(std::string(op) + " " + c.shape.ToString() + " axes " +
                   kernels::IntsToString(c.axes));
      Tensor got = Run1(op, {x}, {{"axis", c.axes}});
      ExpectNear(got, NaiveReduce(x, axes, op), 2e-6);
    }
  }
}

TEST(ReductionsTest, KeepDimsScalarAxisAndAllAxes) {
  Tensor x = Make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor k = Run1("Sum", {x}, {{"axis", std::vector<int64_t>{1}}, {"keep_dims", true}});
  EXPECT_EQ(k.shape(), TensorShape({2, 1}));
  EXPECT_EQ(Values<float>(k), (std::vector<float>{6, 15}));
  EXPECT_EQ(Values<float>(Run1("Max", {x}, {{"axis", int64_t{0}}})), (std::vector<float>{4, 5, 6}));
  Tensor all = Run1("Mean", {x});
  EXPECT_EQ(all.shape(), TensorShape({}));
  EXPECT_FLOAT_EQ(all.scalar<float>(), 3.5f);
  Tensor allk = Run1("Sum", {x}, {{"keep_dims", true}});
  EXPECT_EQ(allk.shape(), TensorShape({1, 1}));
  Tensor i = Make<int64_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(Values<int64_t>(Run1("Sum", {i}, {{"axis", int64_t{0}}})),
            (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(Values<float>(Run1("Sum", {Random({0, 3}, 1)}, {{"axis", int64_t{0}}})),
            (std::vector<float>{0, 0, 0}));
}

TEST(ReductionsTest, Errors) {
  Tensor x = Random({2, 3}, 1);
  EXPECT_INVALID(RunStatus("Sum", {x}, {{"axis", int64_t{2}}}), "Sum:", "'axis' = 2",
                 "out of range for rank 2", "input shape [2,3]");
  EXPECT_INVALID(RunStatus("Mean", {Make<bool>({true}, {1})}), "Mean:", "'input' has dtype bool");
}

TEST(ReductionsTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), four(4, "four");
  for (auto [shape, axes] : {std::pair{TensorShape{1000000}, std::vector<int64_t>{0}},
                             std::pair{TensorShape{20000, 64}, std::vector<int64_t>{0}},
                             std::pair{TensorShape{64, 20000}, std::vector<int64_t>{1}},
                             std::pair{TensorShape{50, 300, 40}, std::vector<int64_t>{0, 2}}}) {
    Tensor x = Random(shape, 3);
    AttrMap attrs{{"axis", axes}};
    Tensor a = (*RunOn(nullptr, "Sum", {x}, attrs))[0];
    EXPECT_TRUE(a.BitEqual((*RunOn(&one, "Sum", {x}, attrs))[0])) << shape.ToString();
    EXPECT_TRUE(a.BitEqual((*RunOn(&four, "Sum", {x}, attrs))[0])) << shape.ToString();
  }
}

TEST(BroadcastGradTest, BroadcastGradientArgsLikeTF) {
  auto args = [](std::vector<int32_t> a, std::vector<int32_t> b) {
    auto out = RunN("BroadcastGradientArgs", {Tensor::FromVector(a), Tensor::FromVector(b)});
    return std::pair{Values<int32_t>(out[0]), Values<int32_t>(out[1])};
  };
  using V = std::vector<int32_t>;
  EXPECT_EQ(args({2, 1}, {2, 1}), std::pair(V{}, V{}));
  EXPECT_EQ(args({2, 3}, {3}), std::pair(V{}, V{0}));
  EXPECT_EQ(args({4, 1, 3}, {5, 1}), std::pair(V{1}, V{0, 2}));
  EXPECT_INVALID(RunStatus("BroadcastGradientArgs",
                           {Tensor::FromVector<int32_t>({2, 3}), Tensor::FromVector<int32_t>({4})}),
                 "BroadcastGradientArgs:", "incompatible");
}

TEST(BroadcastGradTest, SumToShapeOf) {
  Tensor g = Random({4, 5, 3}, 1);
  for (TensorShape s : {TensorShape{3}, TensorShape{5, 1}, TensorShape{4, 1, 3}, TensorShape{},
                        TensorShape{1, 1, 1}, TensorShape{4, 5, 3}}) {
    SCOPED_TRACE(s.ToString());
    Tensor like = *Tensor::Zeros(DType::kFloat32, s);
    Tensor got = Run1("SumToShapeOf", {g, like});
    EXPECT_EQ(got.shape(), s);
    // Broadcasting it back and differentiating: sum(g * broadcast(x)) has gradient got.
    Tensor via_fn = *kernels::SumToShape(g, s);
    EXPECT_TRUE(got.BitEqual(via_fn));
    double total = 0, want = 0;
    for (float v : Values<float>(got)) total += v;
    for (float v : Values<float>(g)) want += v;
    EXPECT_NEAR(total, want, 1e-4);
  }
  Tensor got = Run1("SumToShapeOf", {g, *Tensor::Zeros(DType::kFloat32, {5, 1})});
  for (int64_t j = 0; j < 5; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t k = 0; k < 3; ++k) s += g.data<float>()[(i * 5 + j) * 3 + k];
    }
    EXPECT_NEAR(got.data<float>()[j], s, 1e-5);
  }
  // Numerically: for z = x + y (broadcast), dL/dy = SumToShapeOf(dL/dz, y).
  Tensor x = Random<double>({4, 5, 3}, 7), y = Random<double>({5, 1}, 8);
  Tensor w = Random<double>({4, 5, 3}, 9);
  CheckGradient(
      [&](const Tensor& yy) {
        return Run1("AddV2", {x, yy});
      },
      y, w, Run1("SumToShapeOf", {w, y}));
  EXPECT_INVALID(RunStatus("SumToShapeOf", {g, *Tensor::Zeros(DType::kFloat32, {2, 3})}),
                 "SumToShapeOf:", "[2,3]", "[4,5,3]");
}

}  // namespace
}  // namespace troupe
