// Internal: Conv2D geometry and direct (no im2col) kernels for a single input channel with unit
// width stride, e.g. LeNet's first layer, where im2col would copy 25 values for every 300 flops.
// The direct kernels vectorise along the output row instead. Both paths are deterministic.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace troupe {
namespace kernels {

struct ConvGeo {
  int64_t n, h, w, c;      // input
  int64_t kh, kw, f;       // filter (kh, kw, c, f)
  int64_t oh, ow;          // output
  int64_t sh, sw, pt, pl;  // strides, padding top/left
  int64_t K() const { return kh * kw * c; }
  int64_t rows() const { return n * oh * ow; }
};

inline bool UseDirectSingleChannel(const ConvGeo& g) { return g.c == 1 && g.sw == 1; }

template <typename T>
void Conv2DDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y);
template <typename T>
void Conv2DBackpropInputDirectC1(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy,
                                 T* dx);
template <typename T>
void Conv2DBackpropFilterDirectC1(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy,
                                  T* dw);

}  // namespace kernels
}  // namespace troupe
