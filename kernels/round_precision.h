// Rounding float32 values to a lower-precision float type and back (emulated low-precision
// storage: float32 arithmetic, operands and results rounded as bfloat16/float16 would store
// them). Contract: round-to-nearest-even; NaN stays NaN, ±inf stays ±inf; bfloat16 keeps
// float32's range; float16 saturates to ±inf beyond its range (|x| >= 65520 rounds to inf, the
// largest finite value is 65504) and has subnormals down to 2^-24, exactly as a real
// conversion to float16 does.
//
// The op `RoundToPrecision(x: float32; attr DstT = bfloat16 | half) -> float32` applies it.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace troupe {
namespace kernels {

float RoundToBFloat16(float x);
float RoundToHalf(float x);
// out[i] = round(in[i]) for dtype kBFloat16 or kHalf (in == out allowed).
void RoundToPrecision(DType dtype, const float* in, float* out, int64_t n);

}  // namespace kernels
}  // namespace troupe
