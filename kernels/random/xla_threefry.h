// TF's ThreeFry streams, which only exist under XLA (tf.function(jit_compile=True) on CPU), as
// XLA's prng.cc lays them out. Unlike the Philox CPU kernels, the bits depend on the SHAPE, not
// just the element count:
//   - 64-bit outputs: element i (row-major) is ThreeFry(counter + i) as x0 | x1 << 32.
//   - 32/16-bit outputs: the shape is split in two along its first even dimension (else its
//     largest); input i of the half shape gives x0 to one element and x1 to its neighbour
//     along that dimension (16-bit types keep the low half of each word).
//   - floats use the HIGH mantissa bits ((bits >> 9) * 2^-23 for float32).
//   - normals pair values across a second split of the shape and run XLA CPU's own log (a
//     Cephes polynomial whose multiply-adds LLVM fuses), glibc's sinf/cosf and sqrt.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype_traits.h"
#include "core/thread_pool.h"

namespace troupe::random::xla {

// XLA's SplitShapeIntoHalves (shared with the GPU kernels): the first even dimension, else the
// (first) largest one. A scalar is treated as [1] (dim 0, all sizes 1).
struct Split {
  int64_t pre = 1;   // product of dims before the split dim
  int64_t d = 1;     // size of the split dim
  int64_t h = 1;     // ceil(d / 2)
  int64_t post = 1;  // product of dims after the split dim
  int dim = 0;
};
Split SplitShapeIntoHalves(const std::vector<int64_t>& dims);

// Raw bits for `dims` (row-major), as RngBitGenerator(THREE_FRY) produces them.
void ThreeFryBits32(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, uint32_t* out,
                    ThreadPool* pool);
void ThreeFryBits64(uint64_t key, uint64_t counter, int64_t n, uint64_t* out, ThreadPool* pool);

// T: float, double, half, bfloat16.
template <typename T>
void ThreeFryUniform(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T* out,
                     ThreadPool* pool);
template <typename T>
void ThreeFryNormal(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T* out,
                    ThreadPool* pool);
template <typename T>
void ThreeFryTruncatedNormal(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                             T* out, ThreadPool* pool);
// T: int32_t, int64_t, uint32_t, uint64_t; lo < hi.
template <typename T>
void ThreeFryUniformInt(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T lo,
                        T hi, T* out, ThreadPool* pool);
template <typename T>
void ThreeFryUniformFullInt(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                            T* out, ThreadPool* pool);

}  // namespace troupe::random::xla
