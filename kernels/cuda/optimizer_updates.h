// Keras' fused optimizer updates on a GPU, for variables that live there. Same float32
// operations in the same order as graph/nn's CPU updates, each rounded separately (no fused
// multiply-add), so the bits equal the CPU's. Pointers are device memory of `device`; the work
// is queued on its stream.
#pragma once

#include <cstdint>

#include "core/device.h"
#include "core/status.h"

namespace troupe::gpu_kernels {

// m += (g - m) * one_minus_b1; v += (g*g - v) * one_minus_b2; w -= (m * alpha) / (sqrt(v) + eps)
Status KerasAdamUpdate(Device device, float* w, float* m, float* v, const float* g, int64_t n,
                       float alpha, float one_minus_b1, float one_minus_b2, float eps);
// m == nullptr: w -= g * lr. Else m = m * mu - g * lr; w += nesterov ? m * mu - g * lr : m.
Status KerasSgdUpdate(Device device, float* w, float* m, const float* g, int64_t n, float lr,
                      float mu, bool nesterov);

}  // namespace troupe::gpu_kernels
