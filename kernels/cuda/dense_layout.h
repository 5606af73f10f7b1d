// Layout helpers for the cuDNN convolutions (CUDA translation units only): a 4-D permutation
// (TF's HWIO filter <-> cuDNN's KRSC/KCRS, NHWC <-> NCHW) and an NHWC window copy that pads
// with zeros at the bottom/right or crops there (TF's asymmetric SAME padding). All launches go
// on `stream`; errors name the device and `op`.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace troupe::gpu_dense {

// out[i0,i1,i2,i3] = in[...] where out dim j is in dim perm[j] (numpy.transpose(in, perm)).
template <typename T>
Status Permute4D(int device, std::string_view op, const T* in, std::array<int64_t, 4> in_dims,
                 std::array<int, 4> perm, T* out, cudaStream_t stream);

// out [n, ho, wo, c] from in [n, hi, wi, c]: out[n,y,x,c] = in[n,y,x,c] where y < hi and x < wi,
// else 0. ho > hi pads at the bottom, ho < hi crops there (likewise for widths).
template <typename T>
Status CopyWindowNHWC(int device, std::string_view op, const T* in, int64_t n, int64_t hi,
                      int64_t wi, int64_t c, T* out, int64_t ho, int64_t wo, cudaStream_t stream);

}  // namespace troupe::gpu_dense
