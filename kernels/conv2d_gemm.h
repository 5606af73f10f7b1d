// Internal: the parts Conv2D's im2col + GEMM path shares between the forward pass
// (conv2d_forward.cc), the input gradient (conv2d_backprop_input.cc) and the filter gradient
// (conv2d_backprop_filter.cc): row blocks, which depend on the shapes only (the filter
// gradient's fix its bits; the forward's and input gradient's do not change any element's
// chain), per-thread scratch buffers (one of each per thread, shared by the three passes), and the
// filter operand of the forward and input-gradient GEMMs, packed once per call when large.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/conv_geometry.h"
#include "kernels/gemm.h"
#include "kernels/gemm_packed.h"
#include "kernels/kernel_util.h"

namespace troupe {
namespace kernels {
namespace conv_gemm {

// Patch rows per block of the GEMM path's filter gradient: ~256K patch elements, 256 to 1024
// rows. Each block writes a K x f partial that is read back by the reduction; with ResNet-50's
// deep layers (K = 4608, f = 512) 64-row blocks moved more partial bytes than the GEMM did
// flops. At most 1024 rows: a float chain over 8192 rows drifted from TF's sum by more than
// 1e-5 (kernels_tf_interop's 1x1 case). It fixes the bits (the fmaf chain runs over a block's
// rows, then the partials are added in block order), from the shapes alone.
inline int64_t FilterGradRows(const ConvGeo& g) {
  return std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(1, g.K()), 256, 1024);
}

// Rows per GEMM call of the forward pass and the input gradient, whose bits do not depend on
// how rows are split. Each call packs the whole filter (K x f, up to 9 MB in ResNet-50's last
// stage), so ~256 rows or more share that (~1M patch elements where K is small). Few blocks
// come in multiples of 4, so 2 (or 4) threads get equal shares.
inline int64_t GemmRows(const ConvGeo& g) {
  const int64_t rows = std::max<int64_t>(1, g.rows());
  const int64_t want =
      std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(1, g.K()), 256, 4096);
  int64_t blocks = (rows + want - 1) / want;
  if (blocks < 32) blocks = (blocks + 3) / 4 * 4;
  return std::max<int64_t>(64, (rows + blocks - 1) / blocks);
}

// A 1x1 filter with unit strides and no padding: the patch matrix is the input itself
// (row r = pixel r, K = c), so the GEMMs read it in place and skip im2col / col2im.
inline bool Pointwise(const ConvGeo& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
         g.oh == g.h && g.ow == g.w;
}

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Per-thread patch buffer, reused across calls (no zero fill: every use overwrites it).
template <typename T>
inline T* Scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// A per-thread float buffer of the calling thread (shared with the workers for the length of
// one call): a transposed filter or filter gradient.
inline float* TransposedScratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Filters of at least this many elements are packed once per call (FilterOperand).
constexpr int64_t kPrepackFilter = int64_t{1} << 16;

inline float* PackedFilterScratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// The filter side op(B) (k x n) of the forward and input-gradient GEMMs. float, with a large
// filter and several row blocks: packed once per call, by all threads, into the calling
// thread's buffer (every row block's GEMM packed all of it again: 9 MB per block in ResNet-50's
// last stage, transposed for the input gradient). The packing is a copy: the same bits.
template <typename T>
struct FilterOperand {
  const T* b;
  int64_t ldb;
  bool tb;
  const float* packed = nullptr;

  void Product(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, T* c, int64_t ldc) const {
    if constexpr (std::is_same_v<T, float>) {
      if (packed != nullptr) return GemmPackedB(false, m, n, k, a, lda, packed, c, ldc);
    }
    Gemm(false, tb, m, n, k, a, lda, b, ldb, c, ldc);
  }
};

template <typename T>
void Prepack(ThreadPool* pool, int64_t n, int64_t k, int64_t rows, int64_t block,
             FilterOperand<T>& op) {
  if constexpr (std::is_same_v<T, float>) {
    if (n * k < kPrepackFilter || rows <= block) return;
    float* dst = PackedFilterScratch(static_cast<size_t>(GemmPackedBSize(n, k)));
    const int64_t unit = GemmPackBUnit(n), panels = (n + unit - 1) / unit;
    const int64_t threads = pool == nullptr ? 1 : pool->num_threads() + 1;
    ParallelForBlocks(pool, panels, (panels + threads - 1) / threads, [&](int64_t p0, int64_t p1) {
      GemmPackB(op.tb, n, k, op.b, op.ldb, p0 * unit, p1 * unit, dst);
    });
    op.packed = dst;
  }
}

}  // namespace conv_gemm
}  // namespace kernels
}  // namespace troupe
