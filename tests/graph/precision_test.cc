// graph/precision.h: ops under a mixed policy compute on rounded operands and round their
// results; suspension keeps float32; gradients round where the forward op did; float16 overflows
// to inf (why mixed_float16 needs loss scaling).
#include "graph/precision.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/function.h"
#include "graph/ops.h"
#include "graph/tape.h"
#include "kernels/round_precision.h"

namespace troupe {
namespace {

Tensor Filled(std::vector<float> v, TensorShape shape) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

std::vector<float> Floats(const Value& v) {
  Tensor t = *v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

// x = [1.00390625+tiny, 3], w = [0.1, 0.2]^T: float32 x.w differs from the bfloat16 emulation.
const std::vector<float> kX = {1.0f + 1.0f / 256 + 1e-6f, 3.0f};
const std::vector<float> kW = {0.1f, 0.2f};

float BF(float x) { return kernels::RoundToBFloat16(x); }

TEST(PrecisionTest, ParsesPolicyNames) {
  EXPECT_EQ(*ParsePrecisionPolicy("float32"), DType::kFloat32);
  EXPECT_EQ(*ParsePrecisionPolicy("mixed_bfloat16"), DType::kBFloat16);
  EXPECT_EQ(*ParsePrecisionPolicy("mixed_float16"), DType::kHalf);
  EXPECT_FALSE(ParsePrecisionPolicy("float16").ok());
  EXPECT_EQ(PrecisionPolicyName(DType::kHalf), "mixed_float16");
}

TEST(PrecisionTest, MatMulRoundsOperandsAndResult) {
  Value x(Filled(kX, {1, 2}));
  Value w(Filled(kW, {2, 1}));
  const float want = BF(BF(kX[0]) * BF(kW[0]) + BF(kX[1]) * BF(kW[1]));
  float f32 = Floats(ops::MatMul(x, w))[0];
  {
    PrecisionScope policy(DType::kBFloat16);
    EXPECT_EQ(CurrentComputeDType(), DType::kBFloat16);
    EXPECT_EQ(Floats(ops::MatMul(x, w))[0], want);
    {
      PrecisionScope keep(DType::kFloat32);  // as BatchNormalization does
      EXPECT_EQ(Floats(ops::MatMul(x, w))[0], f32);
    }
  }
  EXPECT_NE(f32, want);
  EXPECT_EQ(CurrentComputeDType(), DType::kFloat32);
  EXPECT_EQ(Floats(ops::MatMul(x, w))[0], f32);
}

TEST(PrecisionTest, GradientsRoundWhereTheForwardDid) {
  Value x(Filled(kX, {1, 2}));
  Value w(Filled(kW, {2, 1}));
  PrecisionScope outer(DType::kFloat32);
  GradientTape tape;
  tape.Watch(w);
  Value y;
  {
    PrecisionScope policy(DType::kBFloat16);
    y = ops::MatMul(x, w);
  }
  // A float32 loss seed that bfloat16 cannot hold: dL/dy = 1 + 2^-9.
  Value loss = ops::Mul(y, ops::ScalarOf(1.0 + 1.0 / 512, DType::kFloat32));
  Result<std::vector<Value>> g = tape.Gradient(loss, std::vector<Value>{w});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  std::vector<float> dw = Floats((*g)[0]);
  const float dy = BF(1.0f + 1.0f / 512);  // the rounded incoming gradient
  EXPECT_EQ(dw[0], BF(BF(kX[0]) * dy));
  EXPECT_EQ(dw[1], BF(BF(kX[1]) * dy));
}

TEST(PrecisionTest, HalfOverflowsToInfAndBFloat16DoesNot) {
  Value big(Filled({300.0f}, {1}));
  {
    PrecisionScope policy(DType::kHalf);
    EXPECT_TRUE(std::isinf(Floats(ops::Mul(big, big))[0]));  // 90000 > 65504
    EXPECT_EQ(Floats(ops::Mul(big, ops::ScalarOf(0.5, DType::kFloat32)))[0], 150.0f);
  }
  {
    PrecisionScope policy(DType::kBFloat16);
    EXPECT_EQ(Floats(ops::Mul(big, big))[0], BF(90000.0f));
  }
}

// Traced: the variable read and the input are rounded once each, MatMul's result once, and
// Relu (which keeps rounded values exact) and the reuse of a rounded value add no rounding.
TEST(PrecisionTest, TracedGraphRoundsEachValueOnce) {
  Variable w = *Variable::Create(Value(Filled(kW, {2, 1})), "w");
  Function f("f", [&](const Args& args) -> Outputs {
    PrecisionScope policy(DType::kBFloat16);
    Value h = ops::Relu(ops::MatMul(args[0].value(), Value(w)));
    return std::vector<Value>{ops::Add(h, h)};
  });
  Result<std::vector<Tensor>> r = f.Run({Filled(kX, {1, 2})});
  ASSERT_TRUE(r.ok()) << r.status();
  const float h = BF(BF(kX[0]) * BF(kW[0]) + BF(kX[1]) * BF(kW[1]));
  EXPECT_EQ((*r)[0].data<float>()[0], BF(h + h));
  const FuncGraph& g = f.concrete_functions()[0]->graph();
  int rounds = 0;
  for (int i = 0; i < g.num_nodes(); ++i) rounds += g.node(i).op == "RoundToPrecision";
  EXPECT_EQ(rounds, 4);  // x, the read of w, MatMul's output, Add's output
}

}  // namespace
}  // namespace troupe
