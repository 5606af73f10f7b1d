// Compute-precision policy: Keras' "mixed_bfloat16" / "mixed_float16" dtype policies,
// emulated on float32 tensors (what oneDNN and tensor cores do for low-precision matmul/conv:
// low-precision operands, float32 accumulation, a rounded result).
//
// Contract. While the innermost PrecisionScope on this thread names bfloat16 or half, every
// op applied through Apply() that produces a float32 output (except casts, random and stateful
// ops) runs on operands rounded to that type and its float32 outputs are rounded to it (see
// kernels/round_precision.h: round-to-nearest-even, float16 saturates to inf beyond 65504).
// Operands not produced under the policy — variable reads (Keras' autocast), model inputs,
// constants — are rounded where they are used; values already rounded are not rounded again.
// PrecisionScope(kFloat32) suspends the policy: layers Keras keeps in float32 (BN, LN,
// Embedding gather, attention softmax, losses) open one (KeepFloat32 below). As in Keras,
// BatchNormalization's input is rounded first and LayerNormalization's is not. Variables, optimizer
// state and updates stay float32 (the optimizer runs outside the policy). A GradientTape records
// the policy of each op and computes that op's gradient under it, so the backward pass rounds where
// the forward did (the gradient of a rounding is a rounding, as the gradient of a Cast is a Cast).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "graph/value.h"

namespace troupe {

// "float32" -> kFloat32, "mixed_bfloat16" -> kBFloat16, "mixed_float16" -> kHalf.
Result<DType> ParsePrecisionPolicy(std::string_view name);
std::string_view PrecisionPolicyName(DType compute);

// RAII: `compute` (kFloat32, kBFloat16 or kHalf) is the compute dtype until destruction.
// The set of values known to be rounded lives while any scope is open on this thread.
class PrecisionScope {
 public:
  explicit PrecisionScope(DType compute);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;
};

// The compute dtype of the innermost scope; kFloat32 when none is open.
DType CurrentComputeDType();

// x rounded to `compute` (a float32 value in, a float32 value out; x itself for kFloat32 or a
// non-float32 x).
Value RoundTo(const Value& x, DType compute);

// Runs `body` (a layer Keras keeps in float32: BatchNormalization, LayerNormalization, the
// Embedding gather, ops.mean) with the policy suspended, then rounds its float32 result to the
// enclosing compute dtype, as Keras casts such a layer's output to its compute dtype.
template <typename Body>
Value KeepFloat32(Body&& body) {
  const DType outer = CurrentComputeDType();
  Value y;
  {
    PrecisionScope float32(DType::kFloat32);
    y = body();
  }
  return RoundTo(y, outer);
}

namespace internal {
// Apply() under a low-precision policy: rounds operands and results around the raw dispatch.
std::vector<Value> ApplyWithPolicy(std::string_view op, const std::vector<Value>& inputs,
                                   const AttrMap& attrs, std::string_view name, DType compute);
// The dispatch without any policy (value.cc).
std::vector<Value> ApplyRaw(std::string_view op, const std::vector<Value>& inputs,
                            const AttrMap& attrs, std::string_view name);
}  // namespace internal

}  // namespace troupe
