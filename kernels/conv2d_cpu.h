// Internal: Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter on the CPU, float32/float64,
// on a checked geometry (conv_geometry.h). Each call picks its path from the shapes alone, in
// this order: Winograd (float unit-stride 3x3s of 16+ channels: conv2d_winograd.h); the direct
// kernels (conv2d_direct.h: one input channel with unit width stride, conv2d_direct.cc; few input
// and 16/32 output channels, 17-32 -> 32-channel filters and the forward (and some filter
// gradients) of up to 64 -> 64, conv2d_direct_small*.cc; dilation 1 only); else im2col
// (im2col.h) + GEMM (gemm.h, gemm_packed.h; conv2d_gemm.h). 1x1 filters with unit strides and
// no padding skip im2col: the input is the patch matrix. A unit-stride input gradient whose
// rotated filter the Winograd or direct forward kernels take runs as that forward convolution.
//
// Rows of the patch matrix (one per output pixel) are processed in blocks whose size depends
// only on the shapes; Conv2DBackpropFilter sums per-block partial products in block order (for
// large filters, float adds each block's product straight into the result: the same sums) and
// Conv2DBackpropInput scatters in output-pixel order, so results are bitwise the same for any
// thread count.
#pragma once

#include "core/thread_pool.h"
#include "kernels/conv_geometry.h"

namespace troupe {
namespace kernels {

// y [n, oh, ow, f] = x [n, h, w, c] convolved with filter [kh, kw, c, f].
template <typename T>
void Conv2DForward(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y);

// dx [n, h, w, c] from filter and dy [n, oh, ow, f].
template <typename T>
void Conv2DBackpropInput(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy, T* dx);

// dw [kh, kw, c, f] from x and dy.
template <typename T>
void Conv2DBackpropFilter(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy, T* dw);

}  // namespace kernels
}  // namespace troupe
