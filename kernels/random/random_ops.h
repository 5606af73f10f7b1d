// The counter-based random kernels TF's V2 stateless ops run (StatelessRandomUniformV2,
// StatelessRandomNormalV2, StatelessTruncatedNormalV2, StatelessRandomUniformIntV2,
// StatelessRandomUniformFullIntV2), on an explicit (key, counter) and algorithm:
//   - Philox / AUTO_SELECT: bit-equal to TF's CPU kernels (shape-independent flat layout);
//   - ThreeFry: bit-equal to TF under XLA on CPU (jit_compile=True), whose layout and float
//     math depend on the shape (kernels/random/xla_threefry.h).
// Everything higher up (stateless_* seeds, Generator, per-replica streams) is built on these.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/result.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/random/rng_alg.h"

namespace troupe {
class OpRegistry;
}

namespace troupe::random {

enum class Distribution { kUniform, kNormal, kTruncatedNormal, kUniformInt, kUniformFullInt };
std::string_view DistributionOpName(Distribution dist);  // "StatelessRandomNormalV2", ...

struct RandomSpec {
  Distribution dist = Distribution::kUniform;
  DType dtype = DType::kFloat32;
  RngAlgorithm alg = RngAlgorithm::kPhilox;
  KeyCounter key_counter;
  // kUniformInt only: [minval, maxval) as the dtype's bits (sign-extended for int32/int64).
  uint64_t minval_bits = 0;
  uint64_t maxval_bits = 0;
};

// Checks dtype/range for the distribution: InvalidArgument naming the op and the fix.
Status ValidateRandomSpec(const RandomSpec& spec);
// Fills `out` (num_elements(shape) elements of spec.dtype).
Status FillRandom(const RandomSpec& spec, const TensorShape& shape, void* out,
                  ThreadPool* pool = ThreadPool::Default());
Result<Tensor> Random(const RandomSpec& spec, const TensorShape& shape,
                      ThreadPool* pool = ThreadPool::Default());

// Scalar range helpers for kUniformInt: minval/maxval must be scalars of the output dtype.
Status SetIntRange(RandomSpec& spec, const Tensor& minval, const Tensor& maxval);
Status SetIntRange(RandomSpec& spec, int64_t minval, int64_t maxval);

// rnd * mul + add, elementwise in rnd's dtype (mul/add converted to it first), as TF's Python
// applies mean/stddev and [minval, maxval). `fused`: as XLA CPU compiles it (one rounding for
// float32/float64, whose multiply-add LLVM contracts; float16 and bfloat16 round after each op,
// float16 by Troupe's rule xla::XlaFloat16); else two roundings (TF's Mul and Add kernels).
Result<Tensor> ScaleAndShift(const Tensor& rnd, double mul, double add, bool fused);

// Registers the V2 ops (inputs: shape, key, counter, alg [, minval, maxval]; attr "dtype")
// and StatelessRandomGetKeyCounter (seed -> key, counter).
void RegisterRandomOps(OpRegistry& registry);

}  // namespace troupe::random
