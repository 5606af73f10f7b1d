// BatchMatMulV2 against per-batch naive products: adjoint flags, broadcast batch dims, rank-2
// operands, errors, and thread-count independence.
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

// Reference: z[b] = op(x[bx]) · op(y[by]) with batch indices broadcast from the right.
template <typename T>
Tensor NaiveBatchMatMul(const Tensor& x, const Tensor& y, bool ax, bool ay) {
  const int rx = x.rank(), ry = y.rank();
  const int64_t m = x.dim(ax ? rx - 1 : rx - 2), k = x.dim(ax ? rx - 2 : rx - 1);
  const int64_t n = y.dim(ay ? ry - 2 : ry - 1);
  const int rb = std::max(rx, ry) - 2;
  std::vector<int64_t> batch(static_cast<size_t>(rb));
  auto dim_of = [&](const Tensor& t, int d) {  // batch dim d (right-aligned), 1 if absent
    const int off = d - (rb - (t.rank() - 2));
    return off < 0 ? int64_t{1} : t.dim(off);
  };
  for (int d = 0; d < rb; ++d) batch[static_cast<size_t>(d)] = std::max(dim_of(x, d), dim_of(y, d));
  std::vector<int64_t> out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor z = *Tensor::Zeros(x.dtype(), TensorShape(out_dims));
  const int64_t batches = TensorShape(batch).num_elements();
  for (int64_t b = 0; b < batches; ++b) {
    int64_t rem = b, bx = 0, by = 0, sx = 1, sy = 1;
    for (int d = rb - 1; d >= 0; --d) {
      const int64_t i = rem % batch[static_cast<size_t>(d)];
      rem /= batch[static_cast<size_t>(d)];
      const int64_t dx = dim_of(x, d), dy = dim_of(y, d);
      bx += (dx == 1 ? 0 : i) * sx, sx *= dx;
      by += (dy == 1 ? 0 : i) * sy, sy *= dy;
    }
    const T* xp = x.data<T>() + bx * m * k;
    const T* yp = y.data<T>() + by * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          s += double(ax ? xp[p * m + i] : xp[i * k + p]) *
               double(ay ? yp[j * k + p] : yp[p * n + j]);
        }
        z.data<T>()[(b * m + i) * n + j] = static_cast<T>(s);
      }
  }
  return z;
}

struct Case {
  TensorShape x, y;
  bool ax, ay;
};

TEST(BatchMatMulTest, MatchesNaive) {
  const std::vector<Case> cases = {
      {{3, 4, 5}, {3, 5, 6}, false, false},
      {{3, 5, 4}, {3, 5, 6}, true, false},
      {{3, 4, 5}, {3, 6, 5}, false, true},
      {{3, 5, 4}, {3, 6, 5}, true, true},
      {{2, 3, 7, 8}, {2, 3, 8, 7}, false, false},  // [B, heads, T, d] x [B, heads, d, T]
      {{2, 1, 4, 5}, {3, 5, 2}, false, false},     // batch broadcast both ways
      {{4, 5}, {2, 3, 5, 6}, false, false},        // rank-2 x broadcast over y's batch
      {{2, 4, 5}, {5, 3}, false, false},
      {{1, 130, 9}, {2, 9, 7}, false, false},
      // K * N large enough for 64-row blocks: M = 150 is split in three per batch.
      {{2, 150, 256}, {256, 300}, false, false},
      {{2, 256, 150}, {2, 300, 256}, true, true},
      {{2, 0, 3}, {2, 3, 4}, false, false},  // empty
      {{2, 3, 0}, {2, 0, 4}, false, false},  // K = 0: zeros
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.x.ToString() + " x " + c.y.ToString() + (c.ax ? " adj_x" : "") +
                 (c.ay ? " adj_y" : ""));
    AttrMap a{{"adj_x", c.ax}, {"adj_y", c.ay}};
    Tensor x = Random(c.x, seed++), y = Random(c.y, seed++);
    ExpectNear(Run1("BatchMatMulV2", {x, y}, a), NaiveBatchMatMul<float>(x, y, c.ax, c.ay), 1e-5);
    Tensor xd = Random<double>(c.x, seed++), yd = Random<double>(c.y, seed++);
    ExpectNear(Run1("BatchMatMulV2", {xd, yd}, a), NaiveBatchMatMul<double>(xd, yd, c.ax, c.ay),
               1e-12);
  }
}

TEST(BatchMatMulTest, Errors) {
  EXPECT_INVALID(RunStatus("BatchMatMulV2", {Random({2, 3, 4}, 1), Random({2, 5, 6}, 2)}),
                 "BatchMatMulV2:", "inner dimensions differ", "'x' [2,3,4]", "'y' [2,5,6]");
  EXPECT_INVALID(RunStatus("BatchMatMulV2", {Random({2, 3, 4}, 1), Random({3, 4, 6}, 2)}),
                 "BatchMatMulV2:", "batch dims", "[2,3,4]", "[3,4,6]");
  EXPECT_INVALID(RunStatus("BatchMatMulV2", {Random({4}, 1), Random({4, 6}, 2)}),
                 "BatchMatMulV2:", "'x'", "rank");
  EXPECT_INVALID(RunStatus("BatchMatMulV2", {Random({2, 4}, 1), Random<double>({4, 6}, 2)}),
                 "BatchMatMulV2:", "float64");
}

TEST(BatchMatMulTest, SameBitsAnyThreadCount) {
  ThreadPool one(1, "one"), three(3, "three");
  // Attention scores [B*heads, T, d] x [B*heads, d, T], and one tall product split in rows.
  for (auto [xs, ys, ay] : {std::tuple{V{2, 4, 64, 32}, V{2, 4, 64, 32}, true},
                            std::tuple{V{700, 256}, V{3, 256, 300}, false}}) {
    Tensor x = Random(TensorShape(xs), 1), y = Random(TensorShape(ys), 2);
    AttrMap a{{"adj_y", ay}};
    Tensor z = (*RunOn(&one, "BatchMatMulV2", {x, y}, a))[0];
    EXPECT_TRUE(z.BitEqual((*RunOn(&three, "BatchMatMulV2", {x, y}, a))[0]));
    EXPECT_TRUE(z.BitEqual((*RunOn(nullptr, "BatchMatMulV2", {x, y}, a))[0]));
  }
}

}  // namespace
}  // namespace troupe
