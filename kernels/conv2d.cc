// Conv2D (NHWC input, HWIO filter, SAME/VALID, strides, dilations) and its gradients
// Conv2DBackpropInput / Conv2DBackpropFilter, float32/float64, as im2col + kernels/gemm.h (direct
// loops for one input channel with unit width stride: conv2d_direct.cc; register-tiled direct
// kernels for few input and 16/32 output channels: conv2d_direct_small*.cc, which also run
// 17-32 -> 32-channel filters and the forward (and some filter gradients) of up to 64 -> 64;
// both for dilation 1 only, dilated filters take the im2col path). A unit-stride input gradient
// whose rotated filter those forward kernels take runs as that forward convolution.
//
// 1x1 filters with unit strides and no padding skip im2col: the input is the patch matrix.
// Rows of the patch matrix (one per output pixel) are processed in blocks whose size depends
// only on the shapes; Conv2DBackpropFilter sums per-block partial products in block order (for
// large filters, float adds each block's product straight into the result: the same sums) and
// Conv2DBackpropInput scatters in output-pixel order, so results are bitwise the same for any
// thread count. The TF input_sizes / filter_sizes tensors are attributes here (a -1
// batch in input_sizes means "the batch of out_backprop").
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/conv2d_direct.h"
#include "kernels/conv2d_winograd.h"
#include "kernels/conv_util.h"
#include "kernels/gemm.h"
#include "kernels/gemm_packed.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

// Checks ranks, channels and out_backprop (when given) and computes the geometry; unknown
// dims propagate as -1.
Result<ConvGeo> Geometry(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                         const char* in_arg, const TensorShape& filter, const char* filter_arg,
                         const TensorShape* dy) {
  TROUPE_ASSIGN_OR_RETURN(
      ConvShapes s,
      CheckConvShapes(op, attrs, in, in_arg, filter, filter_arg, dy,
                      ConvFilterLayout{"[height, width, in_channels, out_channels]"}));
  ConvGeo g{};
  g.n = s.n, g.h = s.h, g.w = s.w, g.c = s.c, g.kh = s.kh, g.kw = s.kw, g.f = s.last;
  g.oh = s.oh, g.ow = s.ow, g.sh = s.sh, g.sw = s.sw, g.pt = s.pt, g.pl = s.pl;
  g.dh = s.dh, g.dw = s.dw;
  return g;
}

Result<SpecList> Conv2DShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Conv2D";
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kOp, in, "input", "filter"));
  TROUPE_ASSIGN_OR_RETURN(
      ConvGeo g, Geometry(kOp, attrs, in[0].shape, "input", in[1].shape, "filter", nullptr));
  return SpecList{TensorSpec{TensorShape({g.n, g.oh, g.ow, g.f}), in[0].dtype, ""}};
}

// Inputs (filter, out_backprop); attr input_sizes.
Result<ConvGeo> BackpropInputGeo(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Conv2DBackpropInput";
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kOp, in, "filter", "out_backprop"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape sizes, ConvSizesAttr(kOp, attrs, "input_sizes"));
  if (sizes.dim(0) < 0 && !in[1].shape.unknown_rank() && in[1].shape.rank() == 4) {
    sizes.set_dim(0, in[1].shape.dim(0));
  }
  return Geometry(kOp, attrs, sizes, "input_sizes", in[0].shape, "filter", &in[1].shape);
}

Result<SpecList> BackpropInputShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropInputGeo(in, attrs));
  return SpecList{TensorSpec{TensorShape({g.n, g.h, g.w, g.c}), in[0].dtype, ""}};
}

// Inputs (input, out_backprop); attr filter_sizes.
Result<ConvGeo> BackpropFilterGeo(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Conv2DBackpropFilter";
  TROUPE_RETURN_IF_ERROR(CheckConvTypes(kOp, in, "input", "out_backprop"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape sizes, ConvSizesAttr(kOp, attrs, "filter_sizes"));
  for (int64_t d : sizes.dims()) {
    if (d < 0) return OpError(kOp, "'filter_sizes' " + sizes.ToString() + " must be known");
  }
  return Geometry(kOp, attrs, in[0].shape, "input", sizes, "filter_sizes", &in[1].shape);
}

Result<SpecList> BackpropFilterShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropFilterGeo(in, attrs));
  return SpecList{TensorSpec{TensorShape({g.kh, g.kw, g.c, g.f}), in[0].dtype, ""}};
}

// Patch rows per block of the direct kernels' filter gradient: ~64K patch elements, at least 64
// rows. It fixes their bits (one partial per block), LeNet's among them: keep it.
int64_t RowBlock(const ConvGeo& g) {
  return std::clamp<int64_t>((int64_t{1} << 16) / std::max<int64_t>(1, g.K()), 64, 8192);
}

// Patch rows per block of the GEMM path's filter gradient: ~256K patch elements, 256 to 1024
// rows. Each block writes a K x f partial that is read back by the reduction; with ResNet-50's
// deep layers (K = 4608, f = 512) 64-row blocks moved more partial bytes than the GEMM did
// flops. At most 1024 rows: a float chain over 8192 rows drifted from TF's sum by more than
// 1e-5 (kernels_tf_interop's 1x1 case). It fixes the bits (the fmaf chain runs over a block's
// rows, then the partials are added in block order), from the shapes alone.
int64_t FilterGradRows(const ConvGeo& g) {
  return std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(1, g.K()), 256, 1024);
}

// Rows per GEMM call of the forward pass and the input gradient, whose bits do not depend on
// how rows are split. Each call packs the whole filter (K x f, up to 9 MB in ResNet-50's last
// stage), so ~256 rows or more share that (~1M patch elements where K is small). Few blocks
// come in multiples of 4, so 2 (or 4) threads get equal shares.
int64_t GemmRows(const ConvGeo& g) {
  const int64_t rows = std::max<int64_t>(1, g.rows());
  const int64_t want =
      std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(1, g.K()), 256, 4096);
  int64_t blocks = (rows + want - 1) / want;
  if (blocks < 32) blocks = (blocks + 3) / 4 * 4;
  return std::max<int64_t>(64, (rows + blocks - 1) / blocks);
}

// A 1x1 filter with unit strides and no padding: the patch matrix is the input itself
// (row r = pixel r, K = c), so the GEMMs read it in place and skip im2col / col2im.
bool Pointwise(const ConvGeo& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
         g.oh == g.h && g.ow == g.w;
}

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Per-thread patch buffer, reused across calls (no zero fill: every use overwrites it).
template <typename T>
T* Scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// A per-thread float buffer of the calling thread (shared with the workers for the length of
// one call): a transposed filter or filter gradient.
float* TransposedScratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Filters of at least this many elements are packed once per call (FilterOperand).
constexpr int64_t kPrepackFilter = int64_t{1} << 16;

float* PackedFilterScratch(size_t n) {
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

template <typename T>
void Conv2DForward(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (UseWinograd(g, sizeof(T), WinogradPass::kForward)) {
      return Conv2DWinograd(pool, g, x, filter, y);
    }
  }
  if (UseDirectForward(g, sizeof(T))) return Conv2DDirectSmall(pool, g, x, filter, y);
  if (UseDirectSingleChannel(g)) return Conv2DDirectC1(pool, g, x, filter, y);
  const int64_t K = g.K(), rows = g.rows(), block = GemmRows(g);
  const bool pointwise = Pointwise(g);
  FilterOperand<T> op{filter, g.f, false};
  Prepack(pool, g.f, K, rows, block, op);
  auto run = [&](int64_t r0, int64_t r1) {
    const T* a = x + r0 * K;
    if (!pointwise) {
      T* col = Scratch<T>(static_cast<size_t>((r1 - r0) * K));
      Im2Col(g, x, r0, r1, col);
      a = col;
    }
    op.Product(r1 - r0, g.f, K, a, K, y + r0 * g.f, g.f);
  };
  ParallelForBlocks(pool, rows, block, run);
}

// The input gradient of a unit-stride convolution is itself one: dy correlated with the filter
// rotated by 180 degrees with its channel axes swapped (rotated[i][j][o][c] =
// filter[kh-1-i][kw-1-j][c][o]), padded kh-1-pt on top and kw-1-pl on the left. Its geometry
// when Winograd takes it (float 3x3s of 16+ channels: 1.2-2x faster at ResNet's shapes) or
// the direct forward kernels do (few channels; at ResNet-20's shapes, before Winograd took them,
// 12-21% faster than the scatter form below), else nullopt. Each dx
// element is then the forward's arithmetic on the rotated filter.
std::optional<ConvGeo> InputGradAsForward(const ConvGeo& g, size_t elem) {
  if (g.sh != 1 || g.sw != 1 || !Undilated(g) || g.kh * g.kw == 1) return std::nullopt;
  if (g.pt > g.kh - 1 || g.pl > g.kw - 1) return std::nullopt;
  ConvGeo t = g;
  t.h = g.oh, t.w = g.ow, t.c = g.f, t.f = g.c, t.oh = g.h, t.ow = g.w;
  t.pt = g.kh - 1 - g.pt, t.pl = g.kw - 1 - g.pl;
  if (!UseDirectForward(t, elem) && !UseWinograd(t, elem, WinogradPass::kInputGrad)) {
    return std::nullopt;
  }
  return t;
}

template <typename T>
void InputGradByForward(ThreadPool* pool, const ConvGeo& g, const ConvGeo& t, const T* filter,
                        const T* dy, T* dx) {
  T* rotated = Scratch<T>(static_cast<size_t>(g.K() * g.f));
  for (int64_t i = 0; i < g.kh; ++i) {
    for (int64_t j = 0; j < g.kw; ++j) {
      const T* src = filter + ((g.kh - 1 - i) * g.kw + (g.kw - 1 - j)) * g.c * g.f;
      T* dst = rotated + (i * g.kw + j) * g.f * g.c;
      Eigen::Map<RowMat<T>>(dst, g.f, g.c) = Eigen::Map<const RowMat<T>>(src, g.c, g.f).transpose();
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (UseWinograd(t, sizeof(T), WinogradPass::kInputGrad)) {
      return Conv2DWinograd(pool, t, dy, rotated, dx);
    }
  }
  Conv2DDirectSmall(pool, t, dy, rotated, dx);
}

// Otherwise dx: each patch row is dy's row times filter^T (a fmaf chain over f), scattered back
// into its image in row order. Images are grouped so each GEMM gets ~GemmRows rows, and the filter
// is packed or transposed once. Neither changes any element's chain or the order of the scatter's
// adds.
template <typename T>
void Conv2DBackpropInputImpl(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy,
                             T* dx) {
  if (UseDirectSingleChannel(g)) return Conv2DBackpropInputDirectC1(pool, g, filter, dy, dx);
  if (const std::optional<ConvGeo> t = InputGradAsForward(g, sizeof(T))) {
    return InputGradByForward(pool, g, *t, filter, dy, dx);
  }
  if (UseDirectInputGrad(g, sizeof(T))) {
    return Conv2DBackpropInputDirectSmall(pool, g, filter, dy, dx);
  }
  const int64_t K = g.K(), per_image = g.oh * g.ow, image = g.h * g.w * g.c;
  // op(B) = filter^T. float: large filters are packed once, straight from the filter
  // (FilterOperand); others are transposed once into a per-thread buffer so that each GEMM's
  // packing reads them contiguously. The packed GEMM's bits do not depend on the layout. double
  // keeps Eigen reading the filter itself: Eigen's small products vectorise depending on the
  // alignment of a fresh buffer, which would make the bits vary by call.
  const int64_t block = GemmRows(g);
  FilterOperand<T> op{filter, g.f, true};
  Prepack(pool, K, g.f, g.rows(), block, op);
  if constexpr (std::is_same_v<T, float>) {
    if (op.packed == nullptr) {
      float* ft = TransposedScratch(static_cast<size_t>(K * g.f));
      Eigen::Map<RowMat<T>>(ft, g.f, K) = Eigen::Map<const RowMat<T>>(filter, K, g.f).transpose();
      op = FilterOperand<T>{ft, K, false};
    }
  }
  if (Pointwise(g)) {
    // dx is the patch matrix: the GEMM writes it directly.
    ParallelForBlocks(pool, g.rows(), block, [&](int64_t r0, int64_t r1) {
      op.Product(r1 - r0, K, g.f, dy + r0 * g.f, g.f, dx + r0 * K, K);
    });
    return;
  }
  const int64_t group =
      std::max<int64_t>(1, (block + per_image - 1) / std::max<int64_t>(1, per_image));
  const bool strided = StridedPointwise(g);
  auto images = [&](int64_t n0, int64_t n1) {
    T* col = Scratch<T>(static_cast<size_t>(std::min(block, (n1 - n0) * per_image) * K));
    if (strided) {
      ZeroOffGrid(g, n0, n1, dx);
    } else {
      std::fill(dx + n0 * image, dx + n1 * image, T(0));
    }
    for (int64_t r0 = n0 * per_image; r0 < n1 * per_image; r0 += block) {
      const int64_t r1 = std::min(r0 + block, n1 * per_image);
      op.Product(r1 - r0, K, g.f, dy + r0 * g.f, g.f, col, K);
      if (strided) {
        ScatterStrided(g, col, r0, r1, dx);
      } else {
        Col2ImAdd(g, col, r0, r1, dx);
      }
    }
  };
  ParallelForBlocks(pool, g.n, group, images);
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

// dw = the sum over row blocks b = 0, 1, ... of col_b^T . dy_b, added in block order. The
// blocks run in waves of a few partials (a bounded buffer, not one per block), and each wave is
// added to dw in block order, in parallel over dw's elements: every element gets the same sums
// in the same order as adding all partials one after another, so the bits depend on the shapes
// only (not on the wave, nor on the thread count).
template <typename T>
void Conv2DBackpropFilterImpl(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy, T* dw) {
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

}  // namespace
}  // namespace kernels

void RegisterConv2DOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "Conv2D", .num_inputs = 2, .infer_shapes = Conv2DShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, Conv2DShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(
                 ConvGeo g, Geometry(ctx.op_name(), ctx.attrs(), ctx.input(0).shape(), "input",
                                     ctx.input(1).shape(), "filter", nullptr));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             DispatchFloat(y.dtype(), [&](auto tag) {
               using T = decltype(tag);
               Conv2DForward<T>(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(1).data<T>(),
                                y.data<T>());
             });
             return Status::OK();
           });
  Register(r, {.name = "Conv2DBackpropInput", .num_inputs = 2, .infer_shapes = BackpropInputShape},
           [](KernelContext& ctx) -> Status {
             const SpecList in = InputSpecs(ctx);
             TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropInputGeo(in, ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(
                 Tensor dx, ctx.AllocateOutput(0, in[0].dtype, TensorShape({g.n, g.h, g.w, g.c})));
             DispatchFloat(dx.dtype(), [&](auto tag) {
               using T = decltype(tag);
               Conv2DBackpropInputImpl<T>(ctx.pool(), g, ctx.input(0).data<T>(),
                                          ctx.input(1).data<T>(), dx.data<T>());
             });
             return Status::OK();
           });
  Register(
      r, {.name = "Conv2DBackpropFilter", .num_inputs = 2, .infer_shapes = BackpropFilterShape},
      [](KernelContext& ctx) -> Status {
        const SpecList in = InputSpecs(ctx);
        TROUPE_ASSIGN_OR_RETURN(ConvGeo g, BackpropFilterGeo(in, ctx.attrs()));
        TROUPE_ASSIGN_OR_RETURN(
            Tensor dw, ctx.AllocateOutput(0, in[0].dtype, TensorShape({g.kh, g.kw, g.c, g.f})));
        DispatchFloat(dw.dtype(), [&](auto tag) {
          using T = decltype(tag);
          Conv2DBackpropFilterImpl<T>(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(1).data<T>(),
                                      dw.data<T>());
        });
        return Status::OK();
      });
}

}  // namespace troupe
