// Single-thread SGEMM speed: the packed GEMM (kernels/gemm_packed.h) on its AVX2 and AVX-512
// paths against Eigen's GEMM (the default x86-64-v3 build, what kernels::Gemm<float> ran
// before), at square sizes and at the im2col products of ResNet-20 (CIFAR, 16/32/64 channels)
// and ResNet-50 (ImageNet) 3×3 and 1×1 convolutions: forward (nn), input gradient (nt) and
// filter gradient (tn). Prints GFLOP/s and the percentage of the core's register-only FMA peak
// of the matching width (bench/fma_peak.h; Eigen against the AVX2 peak). Times are this
// thread's CPU time, best of several runs, so a shared machine's other load counts less.
//   build/bench/gemm_bench            all shapes
//   build/bench/gemm_bench square     only the rows whose name contains "square"
#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/fma_peak.h"
#include "kernels/gemm_packed.h"

namespace troupe {
namespace {

struct Shape {
  std::string name;
  bool ta, tb;
  int64_t m, n, k;
};

// The three products of a convolution layer whose im2col matrix is rows × K (K = kh·kw·c) and
// whose output has f channels.
void AddConv(std::vector<Shape>& s, const std::string& name, int64_t rows, int64_t K, int64_t f) {
  s.push_back({name + " fwd", false, false, rows, f, K});
  s.push_back({name + " dx", false, true, rows, K, f});
  s.push_back({name + " dw", true, false, K, f, rows});
}

std::vector<Shape> Shapes() {
  std::vector<Shape> s;
  for (int64_t n : {512, 1024, 2048}) s.push_back({"square " + std::to_string(n), 0, 0, n, n, n});
  // ResNet-20 at batch 128 runs these per 8-image slice; 3×3 convolutions, SAME padding.
  AddConv(s, "resnet20 3x3 16ch 32x32", 8 * 32 * 32, 9 * 16, 16);
  AddConv(s, "resnet20 3x3 32ch 16x16", 8 * 16 * 16, 9 * 32, 32);
  AddConv(s, "resnet20 3x3 64ch 8x8", 32 * 8 * 8, 9 * 64, 64);
  // ResNet-50 at batch 32, one image's rows: stage 1 3×3 and 1×1, stage 3 3×3.
  AddConv(s, "resnet50 3x3 64ch 56x56", 56 * 56, 9 * 64, 64);
  AddConv(s, "resnet50 1x1 64->256 56x56", 56 * 56, 64, 256);
  AddConv(s, "resnet50 3x3 256ch 14x14", 4 * 14 * 14, 9 * 256, 256);
  // transformer_lm's Dense layers (a Dense is a 1×1 convolution): 768 tokens (batch 12 × 64),
  // width 128: q/k/v (one product each), the 4x MLP and the 256-way head.
  AddConv(s, "transformer 128->128", 768, 128, 128);
  AddConv(s, "transformer 128->512", 768, 128, 512);
  AddConv(s, "transformer 512->128", 768, 512, 128);
  AddConv(s, "transformer 128->256", 768, 128, 256);
  return s;
}

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                        int64_t, float*, int64_t);

void EigenGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float* c, int64_t ldc) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMat = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
  ConstMat A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMat B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  Eigen::Map<RowMat, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (!ta && !tb) C.noalias() = A * B;
  if (!ta && tb) C.noalias() = A * B.transpose();
  if (ta && !tb) C.noalias() = A.transpose() * B;
  if (ta && tb) C.noalias() = A.transpose() * B.transpose();
}

std::vector<float> Fill(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// GFLOP/s of fn on shape s: best of enough runs for ~0.3 s of work (at least 3).
double Measure(GemmFn fn, const Shape& s, const std::vector<float>& a, const std::vector<float>& b,
               std::vector<float>& c) {
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
  const int reps = std::max(3, static_cast<int>(3e10 / flops));
  const int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = bench::ThreadSeconds();
    fn(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), s.n);
    best = std::min(best, bench::ThreadSeconds() - t0);
  }
  return flops / best * 1e-9;
}

void Row(const Shape& s, double peak2, double peak512) {
  const auto a = Fill(s.m * s.k, 1), b = Fill(s.k * s.n, 2);
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  const double eigen = Measure(EigenGemm, s, a, b, c);
  const double avx2 = Measure(kernels::GemmPackedAvx2, s, a, b, c);
  const double avx512 =
      kernels::HaveGemmPackedAvx512() ? Measure(kernels::GemmPackedAvx512, s, a, b, c) : 0;
  std::printf("%-34s %5lld %5lld %5lld | %6.1f %4.0f%% | %6.1f %4.0f%% | %6.1f %4.0f%% | %4.2fx\n",
              s.name.c_str(), (long long)s.m, (long long)s.n, (long long)s.k, eigen,
              100 * eigen / peak2, avx2, 100 * avx2 / peak2, avx512,
              peak512 > 0 ? 100 * avx512 / peak512 : 0.0, std::max(avx2, avx512) / eigen);
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  using namespace troupe;  // NOLINT
  const double peak2 = bench::FmaPeakGflops(false), peak512 = bench::FmaPeakGflops(true);
  std::printf("FMA peak, one core: AVX2 %.1f GFLOP/s, AVX-512 %.1f GFLOP/s; single thread\n", peak2,
              peak512);
  std::printf("%-34s %5s %5s %5s | %12s | %12s | %12s | %s\n", "GEMM (GFLOP/s, % of peak)", "m",
              "n", "k", "Eigen AVX2", "packed AVX2", "packed 512", "best/Eigen");
  for (const Shape& s : Shapes()) {
    if (argc > 1 && s.name.find(argv[1]) == std::string::npos) continue;
    Row(s, peak2, peak512);
  }
  return 0;
}
