// TF's stateless random functions (tf.random.stateless_*): pure functions of a shape-[2]
// int32/int64 seed and an algorithm.
//   - AUTO_SELECT (the default) and PHILOX scramble the seed into (key, counter) with one
//     Philox call (TF's GenerateKey; int32 seeds are sign-extended) and run TF's CPU kernels.
//   - THREEFRY takes key = (u32)seed[0] | (u32)seed[1] << 32, counter 0, and runs TF's XLA
//     path; mean/stddev and [minval, maxval) scaling is fused there as XLA fuses it.
// Bad seeds, dtypes and ranges give InvalidArgument naming the function and the argument.
#pragma once

#include <cstdint>

#include "core/result.h"
#include "core/tensor.h"
#include "kernels/random/random_ops.h"
#include "kernels/random/rng_alg.h"

namespace troupe::random {

// GenerateKey: one Philox call at counter (s0, s1) under key 0x02461E293EC8F720.
KeyCounter PhiloxScrambleSeed(uint64_t s0, uint64_t s1);
// The (key, counter) the V2 ops get for `seed` (shape [2], int32 or int64) and `alg`.
Result<KeyCounter> SeedToKeyCounter(const Tensor& seed, RngAlgorithm alg);
// A seed tensor from two values (dtype int32 or int64).
Result<Tensor> MakeSeed(int64_t s0, int64_t s1, DType dtype = DType::kInt64);

// Float dtypes: float16, bfloat16, float32, float64. minval/maxval are converted to dtype
// first and the result is rnd * (maxval - minval) + minval, as TF.
Result<Tensor> StatelessUniform(const TensorShape& shape, const Tensor& seed,
                                DType dtype = DType::kFloat32, double minval = 0.0,
                                double maxval = 1.0, RngAlgorithm alg = RngAlgorithm::kAutoSelect);
// Integer dtypes int32/int64/uint32/uint64, [minval, maxval) with minval < maxval (biased
// modulo, as TF). Values are taken modulo the dtype's width.
Result<Tensor> StatelessUniformInt(const TensorShape& shape, const Tensor& seed, DType dtype,
                                   int64_t minval, int64_t maxval,
                                   RngAlgorithm alg = RngAlgorithm::kAutoSelect);
Result<Tensor> StatelessUniformFullInt(const TensorShape& shape, const Tensor& seed, DType dtype,
                                       RngAlgorithm alg = RngAlgorithm::kAutoSelect);
Result<Tensor> StatelessNormal(const TensorShape& shape, const Tensor& seed, double mean = 0.0,
                               double stddev = 1.0, DType dtype = DType::kFloat32,
                               RngAlgorithm alg = RngAlgorithm::kAutoSelect);
Result<Tensor> StatelessTruncatedNormal(const TensorShape& shape, const Tensor& seed,
                                        double mean = 0.0, double stddev = 1.0,
                                        DType dtype = DType::kFloat32,
                                        RngAlgorithm alg = RngAlgorithm::kAutoSelect);

// tf.random.experimental.stateless_split: [num, 2] new seeds of seed's dtype.
Result<Tensor> StatelessSplit(const Tensor& seed, int64_t num = 2,
                              RngAlgorithm alg = RngAlgorithm::kAutoSelect);
// tf.random.experimental.stateless_fold_in: [full-int draw of data's dtype, data].
Result<Tensor> StatelessFoldIn(const Tensor& seed, const Tensor& data,
                               RngAlgorithm alg = RngAlgorithm::kAutoSelect);

// Helpers shared with the stateful Generator. `fused` follows the algorithm: ThreeFry runs
// under XLA, which fuses the multiply-add.
Result<Tensor> ApplyMeanStddev(Tensor rnd, double mean, double stddev, bool fused);
Result<Tensor> ApplyUniformRange(Tensor rnd, double minval, double maxval, bool fused);

}  // namespace troupe::random
