// XLA CPU's float math as TF 2.21's XLA compiles it, for the ThreeFry distributions: the Cephes
// log XLA substitutes for logf (its multiply-adds fused by LLVM), Log1p, ErfInv (Giles), and the
// truncated normal's inverse-CDF transform for float32, float64 and float16. Valid for the
// arguments those distributions produce (positive finite logs, |x| <= 1 for ErfInv).
#pragma once

#include <string_view>

#include "core/dtype_traits.h"

namespace troupe::random::xla {

// XLA CPU's float16 arithmetic depends on the CPU TF runs on: LLVM keeps float16 ops native where
// the host has AVX512-FP16 and contracts a * b + c into one FMA, rounded once; elsewhere it
// computes each op in float32 and rounds it back to float16. Troupe's rule, on every CPU, is the
// second (kRoundEachOp: IEEE binary16, every op rounded; also what TF's eager kernels and
// PyTorch do). kFusedMultiplyAdd is an exact model of the first, selectable only for the
// interop tests that check it against TF on such a CPU; it changes the float16 ThreeFry
// truncated normal and the float16 ThreeFry [minval, maxval) / mean-stddev scaling.
enum class XlaFloat16 { kRoundEachOp, kFusedMultiplyAdd };
void SetXlaFloat16ModelForTesting(XlaFloat16 arithmetic);
XlaFloat16 XlaFloat16Model();
// "round_each_op" / "fused_multiply_add".
std::string_view XlaFloat16Name(XlaFloat16 arithmetic);
bool XlaFloat16FromName(std::string_view name, XlaFloat16* arithmetic);

// a * b + c for float16 operands (given as the floats they hold) under XlaFloat16Model().
half XlaHalfMultiplyAdd(float a, float b, float c);

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
