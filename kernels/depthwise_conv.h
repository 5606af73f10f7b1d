// Internal: CPU kernels of DepthwiseConv2dNative and its backprops (NHWC input, filter
// [kh, kw, c, m], output channel c * m + k; in ConvGeo, m is f and c * m is cm()). The kernels
// vectorise over the output channels (the contiguous NHWC inner dim) and are deterministic: every
// output element is summed by one thread in a fixed tap order, and the filter gradient adds
// per-block partials (blocks of output rows fixed by the shapes) in block order.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/conv_geometry.h"

namespace troupe {
namespace kernels {

template <typename T>
void DepthwiseForward(ThreadPool* pool, const ConvGeo& g, const T* x, const T* filter, T* y);
template <typename T>
void DepthwiseBackpropInput(ThreadPool* pool, const ConvGeo& g, const T* filter, const T* dy,
                            T* dx);
template <typename T>
void DepthwiseBackpropFilter(ThreadPool* pool, const ConvGeo& g, const T* x, const T* dy, T* df);

}  // namespace kernels
}  // namespace troupe
