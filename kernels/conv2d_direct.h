// Internal: Conv2D's direct (no im2col) kernels and the predicates that pick them. C1: one input
// channel with unit width stride, e.g. LeNet's first layer, where im2col would copy 25 values for
// every 300 flops; they vectorise along the output row instead (conv2d_direct.cc). Small:
// register-tiled kernels for few input channels and one to four 64-byte vectors of outputs
// (conv2d_direct_small*.cc). Both sum every element in the GEMM path's order (see each
// predicate for the exceptions) and are deterministic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/conv_geometry.h"

namespace troupe {
namespace kernels {

inline bool UseDirectSingleChannel(const ConvGeo& g) {
  return g.c == 1 && g.sw == 1 && Undilated(g);
}

// (Float unit-stride 3x3s of 16+ channels run Winograd ahead of all of these: conv2d_winograd.h.
// The ResNet-20 figures below were measured before it took them.)

// Few input channels and one or two 64-byte vectors of output channels (LeNet's conv2: 6 -> 16
// floats): register-tiled direct kernels in conv2d_direct_small.cc beat im2col + GEMM there.
inline bool UseDirectSmall(const ConvGeo& g, size_t elem) {
  const int64_t bytes = g.f * static_cast<int64_t>(elem);
  return g.c >= 2 && g.c <= 16 && (bytes == 64 || bytes == 128) && Undilated(g);
}

// 17-32 input channels and two 64-byte vectors of outputs (ResNet-20's 32-channel stage): the
// direct forward and filter-gradient kernels beat im2col + GEMM there too, and so does the input
// gradient where the channels are whole vectors (-20%; bench/kernels_bench, batch 128). Their bits
// are the GEMM path's when the filter gradient uses the GEMM path's row blocks.
inline bool UseDirect32(const ConvGeo& g, size_t elem) {
  return g.c > 16 && g.c <= 32 && g.f * static_cast<int64_t>(elem) == 128 && Undilated(g);
}
inline bool UseDirectInputGrad(const ConvGeo& g, size_t elem) {
  return UseDirectSmall(g, elem) ||
         (UseDirect32(g, elem) && g.c * static_cast<int64_t>(elem) % 64 == 0);
}

// The forward pass also runs direct for 2-64 input channels into 256 bytes of outputs (64
// floats: ResNet-20's last stage, ResNet-50's 3x3 64s and its 7x7 stem) with filters wider than
// 1x1 (1x1s read their input in place on the GEMM path): no im2col copy, 10-35% faster there
// (bench/kernels_bench). Same bits as the GEMM path. And for one input channel into one or two
// vectors (ResNet-20's 1 -> 16 stem, 3x faster than conv2d_direct.cc's expanded rows): the same
// chain as there (which skips the padding rows' zero products: the same sums).
inline bool UseDirectForward(const ConvGeo& g, size_t elem) {
  if (UseDirectSmall(g, elem) || UseDirect32(g, elem)) return true;
  const int64_t bytes = g.f * static_cast<int64_t>(elem);
  if (g.c == 1 && (bytes == 64 || bytes == 128) && Undilated(g)) return true;
  return g.c >= 2 && g.c <= 64 && g.f * static_cast<int64_t>(elem) == 256 && g.kh * g.kw > 1 &&
         Undilated(g);
}

// The filter gradient runs direct for UseDirectForward's 64-float filters where the input has
// few channels (the 7x7 stem of ResNet-50: -30%) or the images are small (ResNet-20's 7x7: -5%);
// at 56x56x64 the GEMM path is a little faster. With the GEMM path's row blocks: its bits.
inline bool UseDirectFilterGrad(const ConvGeo& g, size_t elem) {
  return UseDirectForward(g, elem) && g.f * static_cast<int64_t>(elem) == 256 &&
         (g.c <= 4 || g.oh * g.ow <= 256);
}

template <typename T>
void Conv2DDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y);
template <typename T>
void Conv2DBackpropInputDirectC1(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy,
                                 T* dx);
template <typename T>
void Conv2DBackpropFilterDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy,
                                  T* dw);

template <typename T>
void Conv2DDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y);
template <typename T>
void Conv2DBackpropInputDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* filter,
                                    const T* dy, T* dx);
// Sums per-block partials (blocks of `block` output pixels) in block order, like the GEMM path.
template <typename T>
void Conv2DBackpropFilterDirectSmall(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy,
                                     int64_t block, T* dw);

}  // namespace kernels
}  // namespace troupe
