// Binary/unary elementwise kernels and comparisons against naive references, broadcasting,
// errors, gradients of the unary helpers, and thread-count independence.
#include <cmath>
#include <cstring>

#include "kernels/broadcast.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT

// Naive numpy broadcasting: out[i] = f(a[ia], b[ib]).
template <typename T, typename Tout, typename F>
Tensor NaiveBinary(const Tensor& a, const Tensor& b, F f) {
  TensorShape out = *kernels::BroadcastShapes("t", "x", a.shape(), "y", b.shape());
  Tensor y = *Tensor::Allocate(DTypeOfValue(Tout{}), out);
  const int r = out.rank();
  std::vector<int64_t> idx(static_cast<size_t>(r));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t rem = i;
    for (int d = r; d-- > 0;) {
      idx[static_cast<size_t>(d)] = rem % out.dim(d);
      rem /= out.dim(d);
    }
    auto flat = [&](const TensorShape& s) {
      int64_t off = 0;
      for (int d = 0; d < s.rank(); ++d) {
        int64_t id = idx[static_cast<size_t>(r - s.rank() + d)];
        off = off * s.dim(d) + (s.dim(d) == 1 ? 0 : id);
      }
      return off;
    };
    y.data<Tout>()[i] = f(a.data<T>()[flat(a.shape())], b.data<T>()[flat(b.shape())]);
  }
  return y;
}

struct Case {
  TensorShape a, b;
};
const std::vector<Case> kCases = {
    {{2, 3}, {2, 3}},          {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {4, 5}},  {{4, 1, 3}, {5, 1}},
    {{3, 1, 2, 1}, {4, 2, 5}}, {{7}, {}},     {{1}, {1}},       {{0, 3}, {3}}, {{64, 300}, {300}},
    {{300, 1}, {300, 70}}};

TEST(ElementwiseTest, BinaryOpsMatchNaiveBroadcasting) {
  struct Op {
    const char* name;
    std::function<float(float, float)> f;
  };
  std::vector<Op> ops = {
      {"Add", [](float x, float y) { return x + y; }},
      {"AddV2", [](float x, float y) { return x + y; }},
      {"Sub", [](float x, float y) { return x - y; }},
      {"Mul", [](float x, float y) { return x * y; }},
      {"Div", [](float x, float y) { return x / y; }},
      {"RealDiv", [](float x, float y) { return x / y; }},
      {"Maximum", [](float x, float y) { return std::max(x, y); }},
      {"Minimum", [](float x, float y) { return std::min(x, y); }},
      {"SquaredDifference", [](float x, float y) { return (x - y) * (x - y); }},
      {"Pow", [](float x, float y) { return std::pow(std::abs(x), y); }},
  };
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    Tensor a = Random(c.a, seed++, 0.5, 2.0), b = Random(c.b, seed++, 0.5, 2.0);
    for (const Op& op : ops) {
      SCOPED_TRACE(std::string(op.name) + " " + c.a.ToString() + " " + c.b.ToString());
      Tensor got = Run1(op.name, {a, b});
      ExpectNear(got, NaiveBinary<float, float>(a, b, op.f), 2e-6);
    }
  }
}

// A one-element run (scalar ops, as in the executor's chains of them) gives the bits of the
// same element in a longer run, which Eigen's loop computes with the same scalar functors when
// it is too short for a vector packet.
TEST(ElementwiseTest, OneElementRunsHaveTheBitsOfLongerRuns) {
  const std::vector<float> xs = {1.7f, -0.3f, 2.5f}, ys = {2.3f, 0.0f, -1.25f};
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "Div", "RealDiv", "DivNoNan", "Maximum",
                         "Minimum", "Pow", "SquaredDifference", "Less", "Equal"}) {
    Tensor run = Run1(op, {Make<float>(xs, {3}), Make<float>(ys, {3})});
    const size_t size = DTypeSize(run.dtype());
    for (size_t i = 0; i < xs.size(); ++i) {
      SCOPED_TRACE(std::string(op) + " element " + std::to_string(i));
      Tensor one = Run1(op, {Tensor::Scalar(xs[i]), Tensor::Scalar(ys[i])});
      ASSERT_EQ(one.dtype(), run.dtype());
      EXPECT_EQ(
          std::memcmp(one.raw_data(), static_cast<const char*>(run.raw_data()) + i * size, size),
          0);
    }
  }
  Tensor i64 = Run1("Sub", {Tensor::Scalar<int64_t>(7), Tensor::Scalar<int64_t>(9)});
  EXPECT_EQ(i64.scalar<int64_t>(), -2);
}

TEST(ElementwiseTest, IntegerAndDoubleAdd) {
  Tensor a = Make<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Make<int32_t>({10, 20, 30}, {3});
  EXPECT_EQ(Values<int32_t>(Run1("Add", {a, b})), (std::vector<int32_t>{11, 22, 33, 14, 25, 36}));
  Tensor c = Make<double>({1.5, 2.5}, {2, 1});
  Tensor d = Make<double>({0.25}, {});
  EXPECT_EQ(Values<double>(Run1("Mul", {c, d})), (std::vector<double>{0.375, 0.625}));
}

TEST(ElementwiseTest, DivNoNan) {
  Tensor x = Make<float>({1, 2, 3}, {3});
  Tensor y = Make<float>({2, 0, -1}, {3});
  EXPECT_EQ(Values<float>(Run1("DivNoNan", {x, y})), (std::vector<float>{0.5f, 0, -3}));
}

TEST(ElementwiseTest, Comparisons) {
  Tensor a = Make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Make<float>({2, 2, 7}, {3});
  auto run = [&](const char* op) { return Values<bool>(Run1(op, {a, b})); };
  EXPECT_EQ(run("Equal"), (std::vector<bool>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(run("NotEqual"), (std::vector<bool>{1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(run("Less"), (std::vector<bool>{1, 0, 1, 0, 0, 1}));
  EXPECT_EQ(run("LessEqual"), (std::vector<bool>{1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(run("Greater"), (std::vector<bool>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(run("GreaterEqual"), (std::vector<bool>{0, 1, 0, 1, 1, 0}));
  Tensor i = Make<int64_t>({3, 1}, {2});
  EXPECT_EQ(Values<bool>(Run1("Equal", {i, Make<int64_t>({3}, {})})), (std::vector<bool>{1, 0}));
  EXPECT_EQ(Run1("Equal", {a, b}).dtype(), DType::kBool);
}

TEST(ElementwiseTest, UnaryOps) {
  Tensor x = Random({5, 7}, 3, 0.1, 3.0);
  struct Op {
    const char* name;
    std::function<double(double)> f;
  };
  std::vector<Op> ops = {{"Neg", [](double v) { return -v; }},
                         {"Abs", [](double v) { return std::abs(v); }},
                         {"Square", [](double v) { return v * v; }},
                         {"Sqrt", [](double v) { return std::sqrt(v); }},
                         {"Rsqrt", [](double v) { return 1 / std::sqrt(v); }},
                         {"Reciprocal", [](double v) { return 1 / v; }},
                         {"Exp", [](double v) { return std::exp(v); }},
                         {"Log", [](double v) { return std::log(v); }},
                         {"Relu", [](double v) { return std::max(v, 0.0); }},
                         {"Tanh", [](double v) { return std::tanh(v); }},
                         {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }}};
  for (const Op& op : ops) {
    SCOPED_TRACE(op.name);
    for (double shift : {0.0, -1.5}) {
      Tensor xs = Run1("Add", {x, Make<float>({static_cast<float>(shift)}, {})});
      if (shift < 0 && (std::string(op.name) == "Sqrt" || std::string(op.name) == "Rsqrt" ||
                        std::string(op.name) == "Log" || std::string(op.name) == "Reciprocal")) {
        continue;
      }
      Tensor got = Run1(op.name, {xs});
      Tensor want = *Tensor::Allocate(DType::kFloat32, xs.shape());
      for (int64_t i = 0; i < xs.num_elements(); ++i) {
        want.data<float>()[i] = static_cast<float>(op.f(xs.data<float>()[i]));
      }
      ExpectNear(got, want, 3e-6);
    }
  }
  EXPECT_EQ(Values<float>(Run1("Sign", {Make<float>({-2, 0, 3}, {3})})),
            (std::vector<float>{-1, 0, 1}));
}

// Gradient helper ops (y, dy) checked against numerical derivatives of their forward op.
TEST(ElementwiseTest, UnaryGradientKernels) {
  struct G {
    const char* fwd;
    const char* grad;
    bool takes_y;  // grad(y, dy) if true, else grad(dy, x) (ReluGrad: gradients, features)
  };
  for (G g : {G{"Sqrt", "SqrtGrad", true}, G{"Rsqrt", "RsqrtGrad", true},
              G{"Reciprocal", "ReciprocalGrad", true}, G{"Tanh", "TanhGrad", true},
              G{"Sigmoid", "SigmoidGrad", true}, G{"Relu", "ReluGrad", false}}) {
    SCOPED_TRACE(g.grad);
    const bool positive_domain = std::string(g.grad) == "SqrtGrad" ||
                                 std::string(g.grad) == "RsqrtGrad" ||
                                 std::string(g.grad) == "ReciprocalGrad";
    Tensor x = positive_domain ? Random<double>({3, 4}, 11, 0.2, 2.0)
                               : Random<double>({3, 4}, 11, -2.0, 2.0);
    Tensor w = Random<double>({3, 4}, 12);
    Tensor y = Run1(g.fwd, {x});
    Tensor dx = g.takes_y ? Run1(g.grad, {y, w}) : Run1(g.grad, {w, x});
    CheckGradient([&](const Tensor& xx) { return Run1(g.fwd, {xx}); }, x, w, dx);
  }
}

TEST(ElementwiseTest, Errors) {
  Tensor a = Random({2, 3}, 1), b = Random({4}, 2);
  EXPECT_INVALID(RunStatus("Add", {a, b}), "Add:", "incompatible shapes", "'x' [2,3]", "'y' [4]");
  EXPECT_INVALID(RunStatus("Mul", {a, Random<double>({3}, 1)}), "Mul:", "'x' has dtype float32",
                 "'y' has dtype float64");
  Tensor bools = Make<bool>({true, false}, {2});
  EXPECT_INVALID(RunStatus("Add", {bools, bools}), "Add:", "'x' has dtype bool");
  EXPECT_INVALID(RunStatus("Div", {Make<int32_t>({1}, {1}), Make<int32_t>({1}, {1})}),
                 "Div:", "int32");
  EXPECT_INVALID(RunStatus("ReluGrad", {a, Random({3, 2}, 3)}),
                 "ReluGrad:", "'gradients' has shape [2,3]", "'features' has shape [3,2]");
  EXPECT_INVALID(RunStatus("Sqrt", {Make<int32_t>({4}, {1})}), "Sqrt:", "'x' has dtype int32");
}

TEST(ElementwiseTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), four(4, "four");
  Tensor a = Random({301, 517}, 5), b = Random({517}, 6);
  for (const char* op : {"Add", "Mul", "Maximum"}) {
    Tensor x = (*RunOn(nullptr, op, {a, b}))[0];
    Tensor y = (*RunOn(&one, op, {a, b}))[0];
    Tensor z = (*RunOn(&four, op, {a, b}))[0];
    EXPECT_TRUE(x.BitEqual(y) && x.BitEqual(z)) << op;
  }
  Tensor t = Random({400, 700}, 7);
  EXPECT_TRUE((*RunOn(&one, "Tanh", {t}))[0].BitEqual((*RunOn(&four, "Tanh", {t}))[0]));
}

// Operands that cover the output or are a single value run as one flat loop (no broadcast
// plan): over many blocks and any thread count the bits equal the naive loop's.
TEST(ElementwiseTest, FlatOperandsOverManyBlocks) {
  ThreadPool four(4, "four");
  Tensor big = Random({3, 100001}, 11), one = Random({1, 1}, 12), other = Random({3, 100001}, 13);
  const std::vector<std::pair<Tensor, Tensor>> cases = {
      {big, one}, {one, big}, {big, other}, {one, Random({}, 14)}, {Random({1}, 15), one}};
  for (const auto& [a, b] : cases) {
    SCOPED_TRACE(a.shape().ToString() + " " + b.shape().ToString());
    // Two naive passes, so that no fused multiply-add can change the reference's bits.
    Tensor want = NaiveBinary<float, float>(
        NaiveBinary<float, float>(a, b, [](float x, float y) { return x * y; }), a,
        [](float x, float y) { return x + y; });
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &four}) {
      Tensor prod = (*RunOn(pool, "Mul", {a, b}))[0];
      Tensor got = (*RunOn(pool, "Add", {prod, a}))[0];
      EXPECT_EQ(got.shape(), want.shape());
      EXPECT_TRUE(got.BitEqual(want));
    }
  }
}

// BroadcastTo (the gradient of reductions) is a copy by numpy broadcasting: each case's
// output equals the naive broadcast bit for bit, on 1 to 4 threads.
TEST(ElementwiseTest, BroadcastToCopiesByBroadcasting) {
  ThreadPool one(1, "one"), two(2, "two"), three(3, "three"), four(4, "four");
  for (const Case& c : kCases) {
    TensorShape out = *kernels::BroadcastShapes("t", "x", c.a, "y", c.b);
    Tensor x = Random(c.a, 11);
    Tensor want = NaiveBinary<float, float>(x, *Tensor::Zeros(DType::kFloat32, out),
                                            [](float v, float) { return v; });
    AttrMap attrs{{"shape", out.dims()}};
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &one, &two, &three, &four}) {
      auto got = RunOn(pool, "BroadcastTo", {x}, attrs);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE((*got)[0].BitEqual(want)) << c.a.ToString() << " -> " << out.ToString();
    }
  }
  auto bad =
      RunOn(nullptr, "BroadcastTo", {Random({2, 3}, 1)}, {{"shape", std::vector<int64_t>{4, 3}}});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace troupe
