// XLA CPU's float math as TF 2.21's XLA compiles it, for the ThreeFry distributions: the Cephes
// log XLA substitutes for logf (its multiply-adds fused by LLVM), Log1p, ErfInv (Giles), and the
// truncated normal's inverse-CDF transform for float32, float64 and float16 (float16 computed in
// float32 with a rounding after each op, as XLA CPU does). Valid for the arguments those
// distributions produce (positive finite logs, |x| <= 1 for ErfInv).
#pragma once

#include "core/dtype_traits.h"

namespace troupe::random::xla {

float XlaLogF32(float x);
float XlaLog1pF32(float x);
float XlaErfInvF32(float x);
double XlaLog1pF64(double x);
double XlaErfInvF64(double x);

// TruncatedNormal(uniform): N(0, 1) truncated to [-2, 2] by the inverse CDF, from the uniform
// XLA draws for it (float32/float64: value + smallest normal; float16: the raw [0, 1) value).
float XlaTruncatedNormalF32(float uniform);
double XlaTruncatedNormalF64(double uniform);
half XlaTruncatedNormalF16(half uniform);

// The transform's constants as XLA's constant folder computes them (shared with the GPU
// kernels): alpha_cdf = Phi(-2) and z = Phi(2) - Phi(-2), Phi the N(0, 1) CDF.
template <typename T>
struct TruncatedNormalConstants {
  T alpha_cdf, z;
};
TruncatedNormalConstants<float> XlaTruncatedNormalConstantsF32();
TruncatedNormalConstants<half> XlaTruncatedNormalConstantsF16();

}  // namespace troupe::random::xla
