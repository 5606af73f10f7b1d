// Conv2D's forward pass on the CPU (conv2d_cpu.h): Winograd, the direct kernels, or im2col +
// GEMM in row blocks (GemmRows), the filter packed once per call when large.
#include "kernels/conv2d_cpu.h"
#include "kernels/conv2d_direct.h"
#include "kernels/conv2d_gemm.h"
#include "kernels/conv2d_winograd.h"
#include "kernels/im2col.h"

namespace troupe {
namespace kernels {

using namespace conv_gemm;  // NOLINT

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

template void Conv2DForward<float>(ThreadPool*, const ConvGeo&, const float*, const float*, float*);
template void Conv2DForward<double>(ThreadPool*, const ConvGeo&, const double*, const double*,
                                    double*);

}  // namespace kernels
}  // namespace troupe
