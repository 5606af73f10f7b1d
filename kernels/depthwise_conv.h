// Internal: geometry and CPU kernels of DepthwiseConv2dNative and its backprops (NHWC input,
// filter [kh, kw, c, m], output channel c * m + k). The kernels vectorise over the output
// channels (the contiguous NHWC inner dim) and are deterministic: every output element is
// summed by one thread in a fixed tap order, and the filter gradient adds per-block partials
// (blocks of output rows fixed by the shapes) in block order.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace troupe {
namespace kernels {

struct DwGeo {
  int64_t n, h, w, c;      // input
  int64_t kh, kw, m;       // filter (kh, kw, c, m)
  int64_t oh, ow;          // output (channels c * m)
  int64_t sh, sw, pt, pl;  // strides, padding top/left
  int64_t dh, dw;          // dilations
  int64_t cm() const { return c * m; }
};

template <typename T>
void DepthwiseForward(ThreadPool* pool, const DwGeo& g, const T* x, const T* filter, T* y);
template <typename T>
void DepthwiseBackpropInput(ThreadPool* pool, const DwGeo& g, const T* filter, const T* dy, T* dx);
template <typename T>
void DepthwiseBackpropFilter(ThreadPool* pool, const DwGeo& g, const T* x, const T* dy, T* df);

}  // namespace kernels
}  // namespace troupe
