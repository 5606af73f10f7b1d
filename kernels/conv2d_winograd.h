// Internal: Winograd F(2x2, 3x3) for float 3x3 convolutions with unit strides (Lavin & Gray,
// 2015). Each 2x2 block of outputs comes from a 4x4 input tile: V = B^T d B per tile and
// channel, U = G g G^T per filter, M = V . U as 16 GEMMs over the channels (one per position
// of the 4x4 transform), Y = A^T M A. It does 2.25x fewer multiplies than the direct sum.
//
// Bits: the transforms are fixed sequences of adds (and halvings of the filter), compiled
// without contraction and the same in every vector lane; the 16 products are fmaf chains over
// the channels from zero, on the packed GEMM or (filters of up to 64 x 64 channels) on register
// tiles of their own, the same chains either way. So each output depends on the shapes only:
// not on the thread count, the tile blocking or the AVX2/AVX-512 path. They differ from the
// direct sum's bits by float rounding: within 4e-6 of the sum of |terms| per element, and as
// close to TF's float64 result as TF's float32 is (tests/interop/kernels_tf_test.py).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/conv2d_direct.h"

namespace troupe {
namespace kernels {

// Tiles per block. The filter gradient sums each block's tiles in one chain and adds the blocks
// in order, so its bits depend on this constant (and on the shapes only).
constexpr int64_t kWinogradTileBlock = 256;

// Which convolution a Winograd call computes: the forward, the input gradient (the forward of
// the rotated filter, with g its geometry) or the filter gradient.
enum class WinogradPass { kForward, kInputGrad, kFilterGrad };

// float 3x3, unit strides, no dilation, padding at most 2 on top and left (SAME, VALID, and the
// input gradients' rotated forms of both), and at least 32 input and output channels
// (ResNet-20's 32- and 64-channel stages, ResNet-50's 3x3s; with 16 the 16 GEMMs are too thin to
// pay for the transforms, and conv2d_direct_small.cc's kernels run faster). And enough
// 2x2 output tiles to pay for transforming the filter into 16 c x f matrices on every call: at
// least c * f / 4096 (c * f / 512 for the input gradient, whose filter is rotated first). So
// ResNet-50's 7x7x512 layers take it from 4 images a call (the input gradient from 32), its
// 14x14x256 ones from 1 (from 3); bench/kernels_bench's *SmallBatch.
bool UseWinograd(const ConvGeo& g, size_t elem, WinogradPass pass);

// y [n, oh, ow, f] = the convolution of x [n, h, w, c] with filter [3, 3, c, f].
void Conv2DWinograd(ThreadPool* pool, const ConvGeo& g, const float* x, const float* filter,
                    float* y);

// dw [3, 3, c, f] of the same convolutions, from x and dy [n, oh, ow, f]: Z[xi] = the sum over
// tiles of V[xi]^T (A dy A^T)[xi], in fixed blocks of tiles added in block order, then
// dw = G^T Z G. The same guarantees on bits as the forward. Threads take whole blocks, or,
// when a call has fewer blocks than threads (small per-replica batches), share each block:
// its transforms by tiles, its 16 products one each.
void Conv2DBackpropFilterWinograd(ThreadPool* pool, const ConvGeo& g, const float* x,
                                  const float* dy, float* dw);

}  // namespace kernels
}  // namespace troupe
