// MatMul against a naive product for every transpose combination, its gradients (which are
// MatMuls, as in TF) against numerical derivatives, errors, and thread-count independence.
#include <array>
#include <memory>

#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT

template <typename T>
Tensor NaiveMatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  Tensor c = *Tensor::Zeros(a.dtype(), {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = ta ? a.data<T>()[p * a.dim(1) + i] : a.data<T>()[i * a.dim(1) + p];
        double y = tb ? b.data<T>()[j * b.dim(1) + p] : b.data<T>()[p * b.dim(1) + j];
        s += x * y;
      }
      c.data<T>()[i * n + j] = static_cast<T>(s);
    }
  }
  return c;
}

TEST(MatMulTest, MatchesNaiveAllTransposes) {
  for (auto [m, k, n] :
       {std::tuple{1, 1, 1}, {3, 5, 2}, {64, 400, 120}, {17, 33, 65}, {200, 150, 130}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << m << "x" << k << "x" << n << " ta=" << ta << " tb=" << tb);
        Tensor a = Random(ta ? TensorShape{k, m} : TensorShape{m, k}, 1);
        Tensor b = Random(tb ? TensorShape{n, k} : TensorShape{k, n}, 2);
        AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
        ExpectNear(Run1("MatMul", {a, b}, attrs), NaiveMatMul<float>(a, b, ta, tb), 1e-5);
      }
    }
  }
}

TEST(MatMulTest, Float64AndEmpty) {
  Tensor a = Random<double>({4, 3}, 3), b = Random<double>({3, 2}, 4);
  ExpectNear(Run1("MatMul", {a, b}), NaiveMatMul<double>(a, b, false, false), 1e-14);
  Tensor z = Run1("MatMul", {Random({2, 0}, 1), Random({0, 3}, 2)});
  EXPECT_EQ(z.shape(), TensorShape({2, 3}));
  EXPECT_EQ(Values<float>(z), std::vector<float>(6, 0.0f));
  EXPECT_EQ(Run1("MatMul", {Random({0, 4}, 1), Random({4, 3}, 2)}).shape(), TensorShape({0, 3}));
}

// For c = a·b: da = MatMul(dc, b, transpose_b) and db = MatMul(a, dc, transpose_a), with the
// transposed variants TF's _MatMulGrad uses.
TEST(MatMulTest, GradientsAreMatMuls) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = Random<double>(ta ? TensorShape{4, 3} : TensorShape{3, 4}, 5);
      Tensor b = Random<double>(tb ? TensorShape{2, 4} : TensorShape{4, 2}, 6);
      Tensor w = Random<double>({3, 2}, 7);  // dc
      AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
      Tensor da, db;
      if (!ta && !tb) {
        da = Run1("MatMul", {w, b}, {{"transpose_b", true}});
        db = Run1("MatMul", {a, w}, {{"transpose_a", true}});
      } else if (!ta && tb) {
        da = Run1("MatMul", {w, b});
        db = Run1("MatMul", {w, a}, {{"transpose_a", true}});
      } else if (ta && !tb) {
        da = Run1("MatMul", {b, w}, {{"transpose_b", true}});
        db = Run1("MatMul", {a, w});
      } else {
        da = Run1("MatMul", {b, w}, {{"transpose_a", true}, {"transpose_b", true}});
        db = Run1("MatMul", {w, a}, {{"transpose_a", true}, {"transpose_b", true}});
      }
      CheckGradient([&](const Tensor& x) { return Run1("MatMul", {x, b}, attrs); }, a, w, da);
      CheckGradient([&](const Tensor& x) { return Run1("MatMul", {a, x}, attrs); }, b, w, db);
    }
  }
}

TEST(MatMulTest, Errors) {
  Tensor a = Random({2, 3}, 1), b = Random({4, 5}, 2);
  EXPECT_INVALID(RunStatus("MatMul", {a, b}), "MatMul:", "inner dimensions differ", "'a' [2,3]",
                 "'b' [4,5]", "transpose_a=false");
  EXPECT_INVALID(RunStatus("MatMul", {Random({2, 3, 1}, 1), b}), "MatMul:", "'a' must be rank 2",
                 "[2,3,1]");
  EXPECT_INVALID(RunStatus("MatMul", {a, Random<double>({3, 2}, 1)}),
                 "MatMul:", "'a' has dtype float32", "'b' has dtype float64");
  EXPECT_INVALID(RunStatus("MatMul", {Make<int32_t>({1}, {1, 1}), Make<int32_t>({1}, {1, 1})}),
                 "MatMul:", "'a' has dtype int32");
  EXPECT_INVALID(RunStatus("MatMul", {a, a}, {{"transpose_a", int64_t{1}}}), "transpose_a", "bool");
}

TEST(MatMulTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), three(3, "three");
  Tensor a = Random({700, 300}, 8), b = Random({300, 256}, 9);
  Tensor x = (*RunOn(nullptr, "MatMul", {a, b}))[0];
  EXPECT_TRUE(x.BitEqual((*RunOn(&one, "MatMul", {a, b}))[0]));
  EXPECT_TRUE(x.BitEqual((*RunOn(&three, "MatMul", {a, b}))[0]));
}

// Column and row splits (transformer_lm's Dense products and odd widths), every transpose.
TEST(MatMulTest, SameBitsAnyThreadCountAllTransposes) {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t = 1; t <= 3; ++t) pools.push_back(std::make_unique<ThreadPool>(t, "mm"));
  uint32_t seed = 30;
  for (auto [m, k, n] :
       {std::array<int64_t, 3>{768, 128, 512}, {128, 768, 512}, {768, 512, 128}, {300, 77, 203}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Tensor a = Random(ta ? TensorShape{k, m} : TensorShape{m, k}, seed++);
        Tensor b = Random(tb ? TensorShape{n, k} : TensorShape{k, n}, seed++);
        const AttrMap attrs{{"transpose_a", ta}, {"transpose_b", tb}};
        Tensor x = (*RunOn(nullptr, "MatMul", {a, b}, attrs))[0];
        for (const auto& pool : pools) {
          EXPECT_TRUE(x.BitEqual((*RunOn(pool.get(), "MatMul", {a, b}, attrs))[0]))
              << m << "x" << k << "x" << n << " " << ta << tb << " threads "
              << pool->num_threads() + 1;
        }
      }
    }
  }
}

}  // namespace
}  // namespace troupe
