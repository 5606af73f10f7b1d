// Keras merge layers (keras/src/layers/merging/*.py) and the numpy op-layers that `x * y`,
// `x - y`, `x / y` on KerasTensors produce, as functions of their inputs.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graph/value.h"

namespace troupe::nn {

// Merge.call: inputs of different ranks get size-1 dims inserted at axis 1 until every input
// has the largest rank (so [B, C] meets [B, H, W, C] as [B, 1, 1, C]); equal ranks pass as is
// (and then broadcast numpy-style).
std::vector<Value> AlignMergeRanks(const std::vector<Value>& inputs);

// A rank-0 float input (a Python constant of an op-layer: `x * 0.5`) takes the dtype of the
// other operand, as Keras converts Python scalars; everything else is returned as is.
std::pair<Value, Value> MatchScalarDType(const Value& a, const Value& b);

// keras.layers.Multiply / Maximum / Minimum: in0 op in1 op ... left to right (>= 2 inputs).
Value MultiplyAll(const std::vector<Value>& inputs);
Value MaximumAll(const std::vector<Value>& inputs);
Value MinimumAll(const std::vector<Value>& inputs);
// keras.layers.Average: (in0 + in1 + ...) / n.
Value AverageAll(const std::vector<Value>& inputs);
// keras.layers.Subtract: exactly 2 inputs, in0 - in1.
Value SubtractPair(const std::vector<Value>& inputs);

// keras.layers.Dot(axes, normalize) on [x, y]: batch_dot over axes[0] of x and axes[1] of y
// (negative axes counted from each input's end; axis 0 refused), after L2-normalizing each
// input along its axis (x * min(rsqrt(sum(x^2)), 1e7)) when normalize. `axes` empty: Keras'
// default for axes=None is not reachable from a Dot layer (its axes is required).
Value DotPair(const std::vector<Value>& inputs, int64_t axis_x, int64_t axis_y, bool normalize);

// The op-layers keras.src.ops.numpy.{Multiply, Subtract, Divide, TrueDivide, Maximum,
// Minimum}: two operands, numpy broadcasting, a rank-0 operand allowed on either side.
enum class BinaryOp { kMul, kSub, kDiv, kMax, kMin, kAdd };
Value NumpyBinary(BinaryOp op, const std::vector<Value>& inputs);

}  // namespace troupe::nn
