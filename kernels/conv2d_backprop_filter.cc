// Conv2DBackpropFilter on the CPU (conv2d_cpu.h): the single-channel direct kernel, Winograd,
// the direct kernels, or im2col + GEMM per row block (FilterGradRows) with the block products
// added in block order; large float products are added straight into dw (FilterGradInPlace).
#include "kernels/conv2d_cpu.h"
#include "kernels/conv2d_direct.h"
#include "kernels/conv2d_gemm.h"
#include "kernels/conv2d_winograd.h"
#include "kernels/im2col.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {

using namespace conv_gemm;  // NOLINT

namespace {

// Patch rows per block of the direct kernels' filter gradient: ~64K patch elements, at least 64
// rows. It fixes their bits (one partial per block), LeNet's among them: keep it.
int64_t RowBlock(const ConvGeo& g) {
  return std::clamp<int64_t>((int64_t{1} << 16) / std::max<int64_t>(1, g.K()), 64, 8192);
}

// Per-thread buffer for Conv2DBackpropFilter's block partials, reused across calls.
template <typename T>
T* PartialScratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Filter gradients whose product has at least this many elements (K x f) take
// FilterGradInPlace: their block partials cost more memory traffic than the GEMM itself.
constexpr int64_t kInPlaceFilterGrad = int64_t{1} << 17;

// Rows [k0, k1) of dw (columns [k0, k1) of the patch matrix) over every row block, in block
// order: block 0's product stored, each later one added (GemmPackedAdd). A thread im2cols only
// the patch columns it multiplies, into its own buffer, so they stay in its core's caches; its
// rows are an odd number of cache lines apart, so a transposed read in place spreads over
// every L1 set.
void FilterGradColumns(const ConvGeo& g, const float* x, const float* dy, int64_t k0, int64_t k1,
                       float* dw) {
  const int64_t K = g.K(), rows = g.rows(), block = FilterGradRows(g);
  const bool pointwise = Pointwise(g);
  const int64_t ld = pointwise ? K : ((k1 - k0 + 15) / 16 | 1) * 16;
  float* col = pointwise ? nullptr : Scratch<float>(static_cast<size_t>(block * ld));
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t r1 = std::min(rows, r0 + block);
    const float* a = x + r0 * K + k0;
    if (!pointwise) {
      Im2ColColumns(g, x, r0, r1, k0, k1, col, ld);
      a = col;
    }
    const auto gemm = r0 == 0 ? GemmPacked : GemmPackedAdd;
    gemm(true, false, k1 - k0, g.f, r1 - r0, a, ld, dy + r0 * g.f, g.f, dw + k0 * g.f, g.f);
  }
}

// float, large products: the same block products and block-order sums as the GEMM path below,
// but each block's product is added straight into dw (GemmPackedAdd: c + chain, one rounding;
// block 0 is stored), so no partials are written and read back. Every thread works on every
// block, on its own rows of the product, so 7 blocks on 2 threads do not leave one idle. The
// split changes no element's chain or sum order: the bits depend on the shapes only.
void FilterGradInPlace(ThreadPool* pool, const ConvGeo& g, const float* x, const float* dy,
                       float* dw) {
  const int64_t K = g.K(), rows = g.rows(), block = FilterGradRows(g);
  // swap, as in the GEMM path below, only where x is read in place: im2col'd patch columns are
  // split between threads, which needs them as the product's rows.
  const bool pointwise = Pointwise(g), swap = pointwise && K < g.f;
  const int64_t m = swap ? g.f : K;
  const int64_t threads = pool == nullptr ? 1 : pool->num_threads() + 1;
  const int64_t chunk = simd::RoundUp((m + threads - 1) / threads, 16);
  if (!swap) {
    ParallelForBlocks(pool, m, chunk,
                      [&](int64_t k0, int64_t k1) { FilterGradColumns(g, x, dy, k0, k1, dw); });
    return;
  }
  // dw^T = dy^T . x, each thread on its own filters.
  float* out = TransposedScratch(static_cast<size_t>(K * g.f));
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t r1 = std::min(rows, r0 + block), depth = r1 - r0;
    const auto gemm = r0 == 0 ? GemmPacked : GemmPackedAdd;
    ParallelForBlocks(pool, m, chunk, [&](int64_t i0, int64_t i1) {
      gemm(true, false, i1 - i0, K, depth, dy + r0 * g.f + i0, g.f, x + r0 * K, K, out + i0 * K, K);
    });
  }
  ParallelForBlocks(pool, K, (K + threads - 1) / threads, [&](int64_t k0, int64_t k1) {
    Eigen::Map<RowMat<float>>(dw + k0 * g.f, k1 - k0, g.f) =
        Eigen::Map<const RowMat<float>, 0, Eigen::OuterStride<>>(out + k0, g.f, k1 - k0,
                                                                 Eigen::OuterStride<>(K))
            .transpose();
  });
}

// c = a^T . b for one row block of a filter gradient. `streamed`: a is a slice of x or dy itself
// (a 1x1 filter's patch rows), read once from memory, so float packs all of it
// (GemmPackedStreamA): in place, its rows 256 B to 2 KB apart would miss L1 on every panel.
template <typename T>
void FilterGradProduct(bool streamed, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                       const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (streamed) return GemmPackedStreamA(true, false, m, n, k, a, lda, b, ldb, c, ldc);
  }
  Gemm(true, false, m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace

// dw = the sum over row blocks b = 0, 1, ... of col_b^T . dy_b, added in block order. The
// blocks run in waves of a few partials (a bounded buffer, not one per block), and each wave is
// added to dw in block order, in parallel over dw's elements: every element gets the same sums
// in the same order as adding all partials one after another, so the bits depend on the shapes
// only (not on the wave, nor on the thread count).
template <typename T>
void Conv2DBackpropFilter(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy, T* dw) {
  if (UseDirectSingleChannel(g)) return Conv2DBackpropFilterDirectC1(pool, g, x, dy, dw);
  if constexpr (std::is_same_v<T, float>) {
    if (UseWinograd(g, sizeof(T), WinogradPass::kFilterGrad)) {
      return Conv2DBackpropFilterWinograd(pool, g, x, dy, dw);
    }
  }
  if (UseDirectSmall(g, sizeof(T))) {
    return Conv2DBackpropFilterDirectSmall(pool, g, x, dy, RowBlock(g), dw);
  }
  if (UseDirect32(g, sizeof(T)) || UseDirectFilterGrad(g, sizeof(T))) {
    // The GEMM path's row blocks: the same chains and partial sums, so the same bits.
    return Conv2DBackpropFilterDirectSmall(pool, g, x, dy, FilterGradRows(g), dw);
  }
  const int64_t K = g.K(), rows = g.rows(), block = FilterGradRows(g), size = K * g.f;
  const int64_t nb = (rows + block - 1) / block;
  if constexpr (std::is_same_v<T, float>) {
    if (nb > 0 && size >= kInPlaceFilterGrad) return FilterGradInPlace(pool, g, x, dy, dw);
  }
  const bool pointwise = Pointwise(g);  // the patch rows are x's rows: no im2col
  if (nb == 0) {
    Eigen::Map<RowMat<T>>(dw, K, g.f).setZero();
    return;
  }
  const int64_t wave = std::clamp<int64_t>(
      (int64_t{32} << 20) / std::max<int64_t>(1, size * static_cast<int64_t>(sizeof(T))), 4, 16);
  T* partial = PartialScratch<T>(static_cast<size_t>(std::min(wave, nb) * size));
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  // Fewer patch columns than filters (1x1 expansions, 64 -> 256): float computes dw^T = dy^T .
  // col instead, so the GEMM's rows are the f filters and it packs the narrower operand. fmaf
  // is commutative, so every element's chain (and the block sums) keep their bits.
  const bool swap = std::is_same_v<T, float> && K < g.f;
  std::vector<T> dwt(swap ? static_cast<size_t>(size) : 0);
  T* out = swap ? dwt.data() : dw;
  for (int64_t w0 = 0; w0 < nb; w0 += wave) {
    const int64_t w1 = std::min(nb, w0 + wave);
    ParallelForBlocks(pool, w1 - w0, 1, [&](int64_t i0, int64_t i1) {
      T* col = pointwise ? nullptr : Scratch<T>(static_cast<size_t>(block * K));
      for (int64_t b = w0 + i0; b < w0 + i1; ++b) {
        const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
        const T* a = x + r0 * K;
        if (!pointwise) {
          Im2Col(g, x, r0, r1, col);
          a = col;
        }
        T* dst = b == 0 ? out : partial + (b - w0) * size;
        if (swap) {
          FilterGradProduct(pointwise, g.f, K, r1 - r0, dy + r0 * g.f, g.f, a, K, dst, K);
        } else {
          FilterGradProduct(pointwise, K, g.f, r1 - r0, a, K, dy + r0 * g.f, g.f, dst, g.f);
        }
      }
    });
    const int64_t first = std::max<int64_t>(w0, 1);
    if (first >= w1) continue;
    ParallelFor(pool, size, 2 * (w1 - first), [&](int64_t e0, int64_t e1) {
      Eigen::Map<Arr> acc(out + e0, e1 - e0);
      for (int64_t b = first; b < w1; ++b) {
        acc += Eigen::Map<const Arr>(partial + (b - w0) * size + e0, e1 - e0);
      }
    });
  }
  if (swap)
    Eigen::Map<RowMat<T>>(dw, K, g.f) = Eigen::Map<const RowMat<T>>(out, g.f, K).transpose();
}

template void Conv2DBackpropFilter<float>(ThreadPool*, const ConvGeo&, const float*, const float*,
                                          float*);
template void Conv2DBackpropFilter<double>(ThreadPool*, const ConvGeo&, const double*,
                                           const double*, double*);

}  // namespace kernels
}  // namespace troupe
