// TF's CPU fills (FillPhiloxRandom) for every distribution, into caller memory. Output element
// j of a fixed-cost distribution comes from the Philox call at counter base + j / G (G elements
// per call: 4 for 32/16-bit types and float normals, 2 for 64-bit types and double normals),
// so the result does not depend on how the work is split across threads. Truncated normal
// (variable cost) gives group g the counter region base + g * 256 (float) / 128 (double).
#pragma once

#include <cstdint>

#include "core/dtype_traits.h"
#include "core/philox.h"
#include "core/thread_pool.h"

namespace troupe::random {

// T: float, double, half, bfloat16.
template <typename T>
void PhiloxUniform(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool);
template <typename T>
void PhiloxNormal(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool);
template <typename T>
void PhiloxTruncatedNormal(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool);
// T: int32_t, int64_t, uint32_t, uint64_t. Requires lo < hi (checked by callers): biased modulo
// lo + bits % (hi - lo), as TF.
template <typename T>
void PhiloxUniformInt(const Philox4x32& gen, int64_t n, T lo, T hi, T* out, ThreadPool* pool);
template <typename T>
void PhiloxUniformFullInt(const Philox4x32& gen, int64_t n, T* out, ThreadPool* pool);

}  // namespace troupe::random
