// GPU (CUDA) versions of the counter-based random kernels in kernels/random/random_ops.h: the
// five stateless V2 ops for Philox / ThreeFry / AUTO_SELECT and every dtype they take, with the
// SAME BITS as the CPU kernels for the same key, counter and algorithm:
//   - Philox: TF's CPU fill layout (output element j from the Philox call at counter base + j/G,
//     truncated normal groups at base + g * 256 / 128), glibc's logf/sincosf ported exactly;
//   - ThreeFry: XLA's shape-dependent layout, XLA CPU's Cephes log / erfinv and glibc's sinf/cosf.
// float64 normal and truncated normal are computed by the CPU kernel and copied to the device
// (glibc's double log/sin/cos are not ported yet).
//
// Everything runs on gpu::Stream(device); `out` is device memory.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "core/tensor_shape.h"
#include "kernels/random/random_ops.h"
#include "kernels/random/rng_alg.h"

namespace troupe {
class OpRegistry;
// Registers the kGpu kernels of the V2 random ops (called by RegisterRandomOps with CUDA).
void RegisterGpuRandomKernels(OpRegistry& registry);
}  // namespace troupe

namespace troupe::random::gpu {

// True when FillRandomGpu computes `spec` on the GPU itself (false: host fill + copy).
bool ComputedOnDevice(const RandomSpec& spec);

// Fills num_elements(shape) values of spec.dtype at device pointer `out` of GPU `device`.
// `host_pool` is used only for the host-computed cases.
Status FillRandomGpu(int device, const RandomSpec& spec, const TensorShape& shape, void* out,
                     ThreadPool* host_pool = ThreadPool::Default());

// Raw engine: out[4 * i + j] = word j of the Philox call at counter (base + first + i), full
// 128-bit carry, for i < n (as random::PhiloxBlocks).
Status PhiloxBlocksGpu(int device, const KeyCounter& base, uint64_t first, int64_t n,
                       uint32_t* out);
// Raw engine: out0[i], out1[i] = ThreeFry2x32(start + i, key) (as random::ThreeFryWords).
Status ThreeFryWordsGpu(int device, uint64_t key, uint64_t start, int64_t n, uint32_t* out0,
                        uint32_t* out1);

// StatelessRandomUniformV2 float32 with Philox (for benchmarks): n floats in [0, 1).
Status PhiloxUniformFloatGpu(int device, const KeyCounter& kc, int64_t n, float* out);

}  // namespace troupe::random::gpu
