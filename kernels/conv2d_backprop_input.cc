// Conv2DBackpropInput on the CPU (conv2d_cpu.h): the single-channel direct kernel, the forward
// kernels on the rotated filter (Winograd or direct), the direct input-gradient kernels, or
// GEMM + col2im in groups of images.
#include <optional>

#include "kernels/conv2d_cpu.h"
#include "kernels/conv2d_direct.h"
#include "kernels/conv2d_gemm.h"
#include "kernels/conv2d_winograd.h"
#include "kernels/im2col.h"

namespace troupe {
namespace kernels {

using namespace conv_gemm;  // NOLINT

namespace {

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
  t.pt = g.kh - 1 - g.pt, t.pl = g.kw - 1 - g.pl, t.pb = g.kh - 1 - g.pb, t.pr = g.kw - 1 - g.pr;
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

}  // namespace

// Otherwise dx: each patch row is dy's row times filter^T (a fmaf chain over f), scattered back
// into its image in row order. Images are grouped so each GEMM gets ~GemmRows rows, and the filter
// is packed or transposed once. Neither changes any element's chain or the order of the scatter's
// adds.
template <typename T>
void Conv2DBackpropInput(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy, T* dx) {
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

template void Conv2DBackpropInput<float>(ThreadPool*, const ConvGeo&, const float*, const float*,
                                         float*);
template void Conv2DBackpropInput<double>(ThreadPool*, const ConvGeo&, const double*, const double*,
                                          double*);

}  // namespace kernels
}  // namespace troupe
