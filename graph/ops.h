// Op wrappers over the kernels/ registry, for builder code: each returns a Value (eager or
// symbolic, see value.h) and passes errors on as error Values. Node names follow TF's Python
// op names ("add", "matmul") so traced graphs read like TF's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/value.h"

namespace troupe::ops {

// Constants (eager tensors; captured as Const nodes when used in a trace).
Value Const(Tensor t);
Value Scalar(float v);
Value ScalarOf(double v, DType dtype);  // a scalar of `dtype` (ints truncate)
Value Fill(const std::vector<int64_t>& dims, double v, DType dtype = DType::kFloat32);
Value Zeros(const std::vector<int64_t>& dims, DType dtype = DType::kFloat32);
Value Ones(const std::vector<int64_t>& dims, DType dtype = DType::kFloat32);

Value Identity(const Value& x);
// tf.stop_gradient: x forward, no gradient flows back through it.
Value StopGradient(const Value& x);
Value ZerosLike(const Value& x);
Value OnesLike(const Value& x);
Value AddN(const std::vector<Value>& xs);

// Broadcasting binary ops.
Value Add(const Value& a, const Value& b);  // AddV2
Value Sub(const Value& a, const Value& b);
Value Mul(const Value& a, const Value& b);
Value Div(const Value& a, const Value& b);  // RealDiv
Value DivNoNan(const Value& a, const Value& b);
Value Maximum(const Value& a, const Value& b);
Value Minimum(const Value& a, const Value& b);
Value Pow(const Value& a, const Value& b);
Value SquaredDifference(const Value& a, const Value& b);
Value FloorMod(const Value& a, const Value& b);
Value FloorDiv(const Value& a, const Value& b);

Value Equal(const Value& a, const Value& b);
Value NotEqual(const Value& a, const Value& b);
Value Less(const Value& a, const Value& b);
Value LessEqual(const Value& a, const Value& b);
Value Greater(const Value& a, const Value& b);
Value GreaterEqual(const Value& a, const Value& b);
// where(cond, x, y), broadcasting.
Value Select(const Value& cond, const Value& x, const Value& y);

Value Neg(const Value& x);
Value Abs(const Value& x);
Value Square(const Value& x);
Value Sqrt(const Value& x);
Value Rsqrt(const Value& x);
Value Exp(const Value& x);
Value Log(const Value& x);
Value Log1p(const Value& x);  // log(1 + x), accurate near 0
Value Reciprocal(const Value& x);
Value Sign(const Value& x);
Value Relu(const Value& x);
Value Tanh(const Value& x);
Value Sigmoid(const Value& x);
Value Erf(const Value& x);  // exact GELU: 0.5 * x * (1 + Erf(x / sqrt(2)))
Value Elu(const Value& x);
Value Relu6(const Value& x);
Value LeakyRelu(const Value& x, double alpha = 0.2);

Value MatMul(const Value& a, const Value& b, bool transpose_a = false, bool transpose_b = false);
// BatchMatMulV2: x [..., M, K] · y [..., K, N] with numpy broadcasting of the batch dims
// (adj_x / adj_y transpose the last two dims first).
Value BatchMatMul(const Value& x, const Value& y, bool adj_x = false, bool adj_y = false);

// Reductions; `axes` empty means every axis.
Value Sum(const Value& x, const std::vector<int64_t>& axes = {}, bool keep_dims = false);
Value Mean(const Value& x, const std::vector<int64_t>& axes = {}, bool keep_dims = false);
Value Max(const Value& x, const std::vector<int64_t>& axes = {}, bool keep_dims = false);
Value Min(const Value& x, const std::vector<int64_t>& axes = {}, bool keep_dims = false);
Value Prod(const Value& x, const std::vector<int64_t>& axes = {}, bool keep_dims = false);
Value ArgMax(const Value& x, int64_t axis, DType output_type = DType::kInt64);

Value Reshape(const Value& x, const std::vector<int64_t>& shape);
// tf.broadcast_to with a fully defined `shape` (numpy broadcasting; gradient SumToShapeOf).
Value BroadcastTo(const Value& x, const std::vector<int64_t>& shape);
Value ExpandDims(const Value& x, int64_t axis);
Value Squeeze(const Value& x, const std::vector<int64_t>& axes = {});
Value Shape(const Value& x, DType out_type = DType::kInt32);
Value Cast(const Value& x, DType dtype);
Value Transpose(const Value& x, const std::vector<int64_t>& perm);
Value Slice(const Value& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);
// x[begin:end:strides] with TF's masks (bit i of shrink_axis_mask drops dim i).
Value StridedSlice(const Value& x, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                   int64_t begin_mask = 0, int64_t end_mask = 0, int64_t shrink_axis_mask = 0);
Value Concat(const std::vector<Value>& xs, int64_t axis);
Value Stack(const std::vector<Value>& xs, int64_t axis = 0);   // Pack
std::vector<Value> Unstack(const Value& x, int64_t axis = 0);  // Unpack
// paddings: [before0, after0, before1, after1, ...] (zeros).
Value Pad(const Value& x, const std::vector<int64_t>& paddings);
// GatherV2 along axis 0: params [N, ...], int32/int64 indices of any shape ->
// indices.shape + params.shape[1:]. An index outside [0, N) is an InvalidArgument error.
Value Gather(const Value& params, const Value& indices);
// Rows of data [ids.shape..., ...] summed into [num_segments, ...] by segment id (negative ids
// dropped); deterministic.
Value UnsortedSegmentSum(const Value& data, const Value& segment_ids, int64_t num_segments);

// Neural-network ops (NHWC, HWIO filters; padding "SAME" or "VALID").
Value BiasAdd(const Value& x, const Value& bias);
// dilations: [1, h, w, 1], or empty for none.
Value Conv2D(const Value& x, const Value& filter, const std::vector<int64_t>& strides,
             const std::string& padding, const std::vector<int64_t>& dilations = {});
// DepthwiseConv2dNative: filter [kh, kw, in_channels, multiplier] -> in_channels * multiplier
// output channels (channel c * multiplier + k).
Value DepthwiseConv2D(const Value& x, const Value& filter, const std::vector<int64_t>& strides,
                      const std::string& padding, const std::vector<int64_t>& dilations = {});
Value MaxPool(const Value& x, const std::vector<int64_t>& ksize,
              const std::vector<int64_t>& strides, const std::string& padding);
Value AvgPool(const Value& x, const std::vector<int64_t>& ksize,
              const std::vector<int64_t>& strides, const std::string& padding);
Value Softmax(const Value& logits);
Value LogSoftmax(const Value& logits);
// (per-example loss, backprop) of TF's fused op.
std::vector<Value> SparseSoftmaxCrossEntropyWithLogits(const Value& logits, const Value& labels);

}  // namespace troupe::ops

namespace troupe {

// Arithmetic on Values; a plain number takes the other operand's dtype.
Value operator+(const Value& a, const Value& b);
Value operator-(const Value& a, const Value& b);
Value operator*(const Value& a, const Value& b);
Value operator/(const Value& a, const Value& b);
Value operator-(const Value& a);
Value operator+(const Value& a, double b);
Value operator-(const Value& a, double b);
Value operator*(const Value& a, double b);
Value operator/(const Value& a, double b);
Value operator+(double a, const Value& b);
Value operator-(double a, const Value& b);
Value operator*(double a, const Value& b);
Value operator/(double a, const Value& b);
Value operator%(const Value& a, double b);  // FloorMod
Value operator>(const Value& a, double b);
Value operator<(const Value& a, double b);

}  // namespace troupe
