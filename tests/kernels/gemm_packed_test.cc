// kernels/gemm_packed.h: every path (scalar, AVX2, AVX-512 where the CPU has it) is bit-equal
// (memcmp) to the sequential std::fma chain for edge shapes, all four transpose combinations
// and padded leading dimensions; and the ops built on it (MatMul, BatchMatMulV2, Conv2D and both
// its gradients) give the same bits on every path and at 1, 2, 3 and 4 threads, at ResNet and
// transformer shapes.
#include "kernels/gemm_packed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "tests/kernels/kernel_test_util.h"
#include "tests/testutil/random_fill.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using kernels::GemmPath;
using V = std::vector<int64_t>;

using testutil::UniformFloats;

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                        int64_t, float*, int64_t);

// The sequential fma chain of every element, in a C of leading dimension ldc whose padding
// columns hold -7.
std::vector<float> FmaChain(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                            const std::vector<float>& a, int64_t lda, const std::vector<float>& b,
                            int64_t ldb, int64_t ldc) {
  std::vector<float> want(static_cast<size_t>(m * ldc), -7.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        acc = std::fma(a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)],
                       b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)], acc);
      }
      want[static_cast<size_t>(i * ldc + j)] = acc;
    }
  }
  return want;
}

// Each path against the fma chain for one shape; untouched padding columns of C stay -7.
// lda (ldb) 0: a padded leading dimension (rows of A 3 floats, of B 1 float longer than needed).
void CheckShape(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda = 0,
                int64_t ldb = 0) {
  if (lda == 0) lda = (ta ? m : k) + 3;
  if (ldb == 0) ldb = (tb ? k : n) + 1;
  const int64_t ldc = n + 2;
  const auto a = UniformFloats((ta ? k : m) * lda, 1), b = UniformFloats((tb ? n : k) * ldb, 2);
  const std::vector<float> want = FmaChain(ta, tb, m, n, k, a, lda, b, ldb, ldc);
  std::vector<std::pair<const char*, GemmFn>> paths = {{"scalar", kernels::GemmPackedScalar}};
  if (kernels::HaveGemmPackedAvx2()) paths.push_back({"avx2", kernels::GemmPackedAvx2});
  if (kernels::HaveGemmPackedAvx512()) paths.push_back({"avx512", kernels::GemmPackedAvx512});
  for (auto [name, fn] : paths) {
    std::vector<float> c(want.size(), -7.0f);
    fn(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
    ASSERT_EQ(std::memcmp(c.data(), want.data(), sizeof(float) * c.size()), 0)
        << name << " ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n << " k=" << k;
  }
}

TEST(GemmPackedTest, EveryPathIsTheFmaChain) {
  const int64_t small[] = {1, 2, 5, 17, 63, 64, 65};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : small) {
        for (int64_t n : small) {
          for (int64_t k : small) CheckShape(ta, tb, m, n, k);
        }
      }
      // Several kc blocks (the chain continues through C), several row and column blocks.
      for (auto [m, n, k] :
           {std::tuple{255, 257, 600}, std::tuple{257, 33, 513}, std::tuple{15, 255, 1030},
            std::tuple{460, 48, 257}, std::tuple{97, 144, 300}, std::tuple{3, 4100, 20}}) {
        CheckShape(ta, tb, m, n, k);
      }
      // Rows of A 512 B (a multiple) apart: a transposed A is packed whole, edges included
      // (the transformer's weight gradients: lda 128 and 512).
      CheckShape(ta, tb, 205, 70, 300, 1024);
      CheckShape(ta, tb, 13, 40, 9, 2048);
      CheckShape(ta, tb, 128, 128, 770, 128);
      CheckShape(ta, tb, 512, 130, 768, 512);
      // B exactly as wide as one micro-kernel panel and stored unpadded (n = ldb = 8, 16, 32 or
      // 48: each path's nr for that n), which is read in place rather than packed; over several
      // kc slices.
      for (int64_t n : {8, 16, 32, 48}) CheckShape(ta, tb, 37, n, 600, 0, tb ? 600 : n);
    }
  }
}

// GemmPackedAdd on every path: c0 + the chain, one rounding per element, for one or several kc
// slices (the deeper ones through a scratch product), edge tiles and a packed transposed A.
TEST(GemmPackedTest, AddIsOneRoundedSumAfterTheChain) {
  std::vector<GemmPath> paths = {GemmPath::kScalar};
  if (kernels::HaveGemmPackedAvx2()) paths.push_back(GemmPath::kAvx2);
  if (kernels::HaveGemmPackedAvx512()) paths.push_back(GemmPath::kAvx512);
  for (auto [ta, m, n, k, lda] :
       {std::tuple{true, 37, 70, 256, 0}, std::tuple{false, 37, 70, 256, 0},
        std::tuple{true, 100, 33, 600, 0}, std::tuple{false, 7, 130, 1100, 0},
        std::tuple{true, 200, 64, 250, 1024}, std::tuple{true, 5, 9, 1, 0}}) {
    const int64_t lda_ = lda ? lda : (ta ? m : k) + 3, ldb = n + 1, ldc = n + 2;
    const auto a = UniformFloats((ta ? k : m) * lda_, 3), b = UniformFloats(k * ldb, 4);
    const auto c0 = UniformFloats(m * ldc, 5);
    std::vector<float> want = c0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p) {
          acc = std::fma(a[static_cast<size_t>(ta ? p * lda_ + i : i * lda_ + p)],
                         b[static_cast<size_t>(p * ldb + j)], acc);
        }
        want[static_cast<size_t>(i * ldc + j)] += acc;
      }
    }
    for (GemmPath path : paths) {
      kernels::SetGemmPathForTesting(path);
      std::vector<float> c = c0;
      kernels::GemmPackedAdd(ta, false, m, n, k, a.data(), lda_, b.data(), ldb, c.data(), ldc);
      EXPECT_EQ(std::memcmp(c.data(), want.data(), sizeof(float) * c.size()), 0)
          << "path " << int(path) << " ta=" << ta << " m=" << m << " n=" << n << " k=" << k;
    }
    kernels::SetGemmPathForTesting(GemmPath::kAuto);
  }
}

// GemmPackedStreamA packs every panel of A (the 1x1 filter gradients' path): the same chain on
// every path, for both layouts of A, power-of-2 and odd leading dimensions, several kc slices,
// row blocks and edge tiles.
TEST(GemmPackedTest, StreamedAIsTheFmaChain) {
  std::vector<GemmPath> paths = {GemmPath::kScalar};
  if (kernels::HaveGemmPackedAvx2()) paths.push_back(GemmPath::kAvx2);
  if (kernels::HaveGemmPackedAvx512()) paths.push_back(GemmPath::kAvx512);
  for (bool ta : {true, false}) {
    for (auto [m, n, k, lda] :
         {std::tuple{256, 64, 600, 256}, std::tuple{64, 256, 300, 512}, std::tuple{197, 33, 257, 0},
          std::tuple{5, 70, 9, 0}, std::tuple{390, 128, 40, 1024}}) {
      const int64_t lda_ = lda ? std::max(lda, ta ? m : k) : (ta ? m : k) + 3;
      const int64_t ldb = n + 1, ldc = n + 2;
      const auto a = UniformFloats((ta ? k : m) * lda_, 6), b = UniformFloats(k * ldb, 7);
      const std::vector<float> want = FmaChain(ta, false, m, n, k, a, lda_, b, ldb, ldc);
      for (GemmPath path : paths) {
        kernels::SetGemmPathForTesting(path);
        std::vector<float> c(want.size(), -7.0f);
        kernels::GemmPackedStreamA(ta, false, m, n, k, a.data(), lda_, b.data(), ldb, c.data(),
                                   ldc);
        EXPECT_EQ(std::memcmp(c.data(), want.data(), sizeof(float) * c.size()), 0)
            << "path " << int(path) << " ta=" << ta << " m=" << m << " n=" << n << " k=" << k;
      }
      kernels::SetGemmPathForTesting(GemmPath::kAuto);
    }
  }
}

TEST(GemmPackedTest, AvxPathsExist) {
  if (!kernels::HaveGemmPackedAvx2()) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  if (!kernels::HaveGemmPackedAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  SUCCEED();
}

// Runs every op once per (path, thread count) and expects the bits of the first run.
class SameBitsTest : public ::testing::Test {
 protected:
  void TearDown() override { kernels::SetGemmPathForTesting(GemmPath::kAuto); }

  void Expect(const std::string& op, const std::vector<Tensor>& in, const AttrMap& attrs) {
    SCOPED_TRACE(op);
    // No pool (the calling thread alone), then 1, 2 and 3 workers besides the caller.
    ThreadPool p1(1, "p1"), p2(2, "p2"), p3(3, "p3");
    std::vector<GemmPath> paths = {GemmPath::kAuto, GemmPath::kAvx2};
    if (kernels::HaveGemmPackedAvx512()) paths.push_back(GemmPath::kAvx512);
    Tensor want;
    for (GemmPath path : paths) {
      kernels::SetGemmPathForTesting(path);
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &p1, &p2, &p3}) {
        auto out = RunOn(pool, op, in, attrs);
        ASSERT_TRUE(out.ok()) << out.status();
        if (!want.raw_data()) {
          want = (*out)[0];
          continue;
        }
        EXPECT_TRUE(want.BitEqual((*out)[0]))
            << "path " << int(path) << ", " << (pool ? pool->num_threads() + 1 : 1) << " threads";
      }
    }
  }

  // Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter for one layer.
  void Conv(V xs, V fs, int64_t stride) {
    SCOPED_TRACE(TensorShape(xs).ToString() + " * " + TensorShape(fs).ToString());
    Tensor x = Random(TensorShape(xs), 1), f = Random(TensorShape(fs), 2);
    AttrMap a{{"strides", V{1, stride, stride, 1}}, {"padding", std::string("SAME")}};
    Expect("Conv2D", {x, f}, a);
    Tensor y = Run1("Conv2D", {x, f}, a);
    Tensor dy = Random(y.shape(), 3);
    AttrMap bf = a, bi = a;
    bf.Set("filter_sizes", fs);
    bi.Set("input_sizes", xs);
    Expect("Conv2DBackpropFilter", {x, dy}, bf);
    Expect("Conv2DBackpropInput", {f, dy}, bi);
  }
};

// ResNet-20's layers: 16 channels and the strided 3x3s run conv2d_direct_small*.cc's kernels,
// unit-stride 32 -> 32 and 64 -> 64 Winograd, and im2col + GEMM the rest; the 1 -> 16 stem the
// direct forward and conv2d_direct.cc's gradients. Then ResNet-50's 1x1s and a Winograd 3x3.
TEST_F(SameBitsTest, ResNetConvolutions) {
  Conv({8, 32, 32, 1}, {3, 3, 1, 16}, 1);
  Conv({8, 32, 32, 16}, {3, 3, 16, 16}, 1);
  Conv({8, 16, 16, 32}, {3, 3, 32, 64}, 2);
  Conv({8, 32, 32, 16}, {3, 3, 16, 32}, 2);
  Conv({8, 16, 16, 32}, {3, 3, 32, 32}, 1);
  Conv({8, 8, 8, 64}, {3, 3, 64, 64}, 1);
  Conv({8, 32, 32, 3}, {3, 3, 3, 16}, 1);
  // ResNet-50's bottleneck 1x1s over two filter-gradient row blocks: the expansion computed
  // transposed and the reduction, both with the batch's patch rows packed as they stream.
  Conv({8, 14, 14, 64}, {1, 1, 64, 256}, 1);
  Conv({8, 14, 14, 256}, {1, 1, 256, 64}, 1);
  // Its 3x3s run Winograd F(2x2, 3x3): forward, input and filter gradient.
  Conv({4, 14, 14, 128}, {3, 3, 128, 128}, 1);
}

TEST_F(SameBitsTest, TransformerMatMuls) {
  // c = a·b at 128 × 512 and both gradients (TF's _MatMulGrad: dc·bᵀ and aᵀ·dc).
  Tensor a = Random({128, 512}, 4), b = Random({512, 512}, 5), dc = Random({128, 512}, 6);
  Expect("MatMul", {a, b}, {});
  Expect("MatMul", {dc, b}, {{"transpose_b", true}});
  Expect("MatMul", {a, dc}, {{"transpose_a", true}});
  Tensor w = Random({512, 2048}, 7);
  Expect("MatMul", {a, w}, {});
  // Attention: q·kᵀ and p·v per head, [batch · heads, 64, 32].
  Tensor q = Random({16, 64, 32}, 8), k = Random({16, 64, 32}, 9), p = Random({16, 64, 64}, 10);
  Expect("BatchMatMulV2", {q, k}, {{"adj_y", true}});
  Expect("BatchMatMulV2", {p, q}, {});
  Expect("BatchMatMulV2", {p, q}, {{"adj_x", true}});
}

// MatMul's product is exactly the fma chain (the ops add nothing to Gemm's arithmetic).
TEST(GemmPackedOpsTest, MatMulIsTheFmaChain) {
  const int64_t m = 70, k = 300, n = 90;
  Tensor a = Random({m, k}, 11), b = Random({k, n}, 12);
  Tensor c = Run1("MatMul", {a, b});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        acc = std::fma(a.data<float>()[i * k + p], b.data<float>()[p * n + j], acc);
      }
      float got = c.data<float>()[i * n + j];
      ASSERT_EQ(std::memcmp(&got, &acc, sizeof(float)), 0) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace troupe
