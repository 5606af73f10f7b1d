#include "graph/ops.h"

#include "core/dtype_traits.h"

namespace troupe::ops {
namespace {

AttrMap AxesAttrs(const std::vector<int64_t>& axes, bool keep_dims) {
  AttrMap attrs;
  if (!axes.empty()) attrs.Set("axis", axes);
  attrs.Set("keep_dims", keep_dims);
  return attrs;
}

}  // namespace

Value Const(Tensor t) { return Value(std::move(t)); }
Value Scalar(float v) { return Value(Tensor::Scalar(v)); }

Value ScalarOf(double v, DType dtype) {
  Result<Tensor> t = Tensor::Allocate(dtype, TensorShape{});
  if (!t.ok()) return Value::Error(t.status());
  bool ok = VisitNumericDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    *t->data<T>() = static_cast<T>(v);
  });
  if (!ok) {
    return Value::Error(InvalidArgumentError("cannot make a " + std::string(DTypeName(dtype)) +
                                             " scalar from a number"));
  }
  return Value(*t);
}

Value Fill(const std::vector<int64_t>& dims, double v, DType dtype) {
  return Apply1("Fill", {ScalarOf(v, dtype)}, {{"dims", dims}}, "Fill");
}
Value Zeros(const std::vector<int64_t>& dims, DType dtype) { return Fill(dims, 0, dtype); }
Value Ones(const std::vector<int64_t>& dims, DType dtype) { return Fill(dims, 1, dtype); }

Value Identity(const Value& x) { return Apply1("Identity", {x}, {}, "Identity"); }
Value StopGradient(const Value& x) { return Apply1("StopGradient", {x}, {}, "StopGradient"); }
Value ZerosLike(const Value& x) { return Apply1("ZerosLike", {x}, {}, "zeros_like"); }
Value OnesLike(const Value& x) { return Apply1("OnesLike", {x}, {}, "ones_like"); }
Value AddN(const std::vector<Value>& xs) {
  if (xs.size() == 1) return xs[0];
  return Apply1("AddN", xs, {}, "AddN");
}

Value Add(const Value& a, const Value& b) { return Apply1("AddV2", {a, b}, {}, "add"); }
Value Sub(const Value& a, const Value& b) { return Apply1("Sub", {a, b}, {}, "sub"); }
Value Mul(const Value& a, const Value& b) { return Apply1("Mul", {a, b}, {}, "mul"); }
Value Div(const Value& a, const Value& b) { return Apply1("RealDiv", {a, b}, {}, "truediv"); }
Value DivNoNan(const Value& a, const Value& b) {
  return Apply1("DivNoNan", {a, b}, {}, "div_no_nan");
}
Value Maximum(const Value& a, const Value& b) { return Apply1("Maximum", {a, b}, {}, "Maximum"); }
Value Minimum(const Value& a, const Value& b) { return Apply1("Minimum", {a, b}, {}, "Minimum"); }
Value Pow(const Value& a, const Value& b) { return Apply1("Pow", {a, b}, {}, "pow"); }
Value SquaredDifference(const Value& a, const Value& b) {
  return Apply1("SquaredDifference", {a, b}, {}, "SquaredDifference");
}
Value FloorMod(const Value& a, const Value& b) { return Apply1("FloorMod", {a, b}, {}, "mod"); }
Value FloorDiv(const Value& a, const Value& b) {
  return Apply1("FloorDiv", {a, b}, {}, "floordiv");
}

Value Equal(const Value& a, const Value& b) { return Apply1("Equal", {a, b}, {}, "Equal"); }
Value NotEqual(const Value& a, const Value& b) {
  return Apply1("NotEqual", {a, b}, {}, "NotEqual");
}
Value Less(const Value& a, const Value& b) { return Apply1("Less", {a, b}, {}, "Less"); }
Value LessEqual(const Value& a, const Value& b) {
  return Apply1("LessEqual", {a, b}, {}, "LessEqual");
}
Value Greater(const Value& a, const Value& b) { return Apply1("Greater", {a, b}, {}, "Greater"); }
Value GreaterEqual(const Value& a, const Value& b) {
  return Apply1("GreaterEqual", {a, b}, {}, "GreaterEqual");
}
Value Select(const Value& cond, const Value& x, const Value& y) {
  return Apply1("SelectV2", {cond, x, y}, {}, "SelectV2");
}

Value Neg(const Value& x) { return Apply1("Neg", {x}, {}, "Neg"); }
Value Abs(const Value& x) { return Apply1("Abs", {x}, {}, "Abs"); }
Value Square(const Value& x) { return Apply1("Square", {x}, {}, "Square"); }
Value Sqrt(const Value& x) { return Apply1("Sqrt", {x}, {}, "Sqrt"); }
Value Rsqrt(const Value& x) { return Apply1("Rsqrt", {x}, {}, "Rsqrt"); }
Value Exp(const Value& x) { return Apply1("Exp", {x}, {}, "Exp"); }
Value Log(const Value& x) { return Apply1("Log", {x}, {}, "Log"); }
Value Log1p(const Value& x) { return Apply1("Log1p", {x}, {}, "Log1p"); }
Value Reciprocal(const Value& x) { return Apply1("Reciprocal", {x}, {}, "Reciprocal"); }
Value Sign(const Value& x) { return Apply1("Sign", {x}, {}, "Sign"); }
Value Relu(const Value& x) { return Apply1("Relu", {x}, {}, "Relu"); }
Value Tanh(const Value& x) { return Apply1("Tanh", {x}, {}, "Tanh"); }
Value Sigmoid(const Value& x) { return Apply1("Sigmoid", {x}, {}, "Sigmoid"); }
Value Erf(const Value& x) { return Apply1("Erf", {x}, {}, "Erf"); }
Value Elu(const Value& x) { return Apply1("Elu", {x}, {}, "Elu"); }
Value Relu6(const Value& x) { return Apply1("Relu6", {x}, {}, "Relu6"); }
Value LeakyRelu(const Value& x, double alpha) {
  return Apply1("LeakyRelu", {x}, {{"alpha", alpha}}, "LeakyRelu");
}

Value MatMul(const Value& a, const Value& b, bool transpose_a, bool transpose_b) {
  AttrMap attrs;
  if (transpose_a) attrs.Set("transpose_a", true);
  if (transpose_b) attrs.Set("transpose_b", true);
  return Apply1("MatMul", {a, b}, attrs, "MatMul");
}
Value BatchMatMul(const Value& x, const Value& y, bool adj_x, bool adj_y) {
  AttrMap attrs;
  if (adj_x) attrs.Set("adj_x", true);
  if (adj_y) attrs.Set("adj_y", true);
  return Apply1("BatchMatMulV2", {x, y}, attrs, "MatMul");
}

Value Sum(const Value& x, const std::vector<int64_t>& axes, bool keep_dims) {
  return Apply1("Sum", {x}, AxesAttrs(axes, keep_dims), "Sum");
}
Value Mean(const Value& x, const std::vector<int64_t>& axes, bool keep_dims) {
  return Apply1("Mean", {x}, AxesAttrs(axes, keep_dims), "Mean");
}
Value Max(const Value& x, const std::vector<int64_t>& axes, bool keep_dims) {
  return Apply1("Max", {x}, AxesAttrs(axes, keep_dims), "Max");
}
Value Min(const Value& x, const std::vector<int64_t>& axes, bool keep_dims) {
  return Apply1("Min", {x}, AxesAttrs(axes, keep_dims), "Min");
}
Value Prod(const Value& x, const std::vector<int64_t>& axes, bool keep_dims) {
  return Apply1("Prod", {x}, AxesAttrs(axes, keep_dims), "Prod");
}
Value ArgMax(const Value& x, int64_t axis, DType output_type) {
  return Apply1("ArgMax", {x}, {{"axis", axis}, {"output_type", output_type}}, "ArgMax");
}

Value Reshape(const Value& x, const std::vector<int64_t>& shape) {
  return Apply1("Reshape", {x}, {{"shape", shape}}, "Reshape");
}
Value BroadcastTo(const Value& x, const std::vector<int64_t>& shape) {
  return Apply1("BroadcastTo", {x}, {{"shape", shape}}, "BroadcastTo");
}
Value ExpandDims(const Value& x, int64_t axis) {
  return Apply1("ExpandDims", {x}, {{"axis", axis}}, "ExpandDims");
}
Value Squeeze(const Value& x, const std::vector<int64_t>& axes) {
  AttrMap attrs;
  if (!axes.empty()) attrs.Set("squeeze_dims", axes);
  return Apply1("Squeeze", {x}, attrs, "Squeeze");
}
Value Shape(const Value& x, DType out_type) {
  return Apply1("Shape", {x}, {{"out_type", out_type}}, "Shape");
}
Value Cast(const Value& x, DType dtype) {
  if (x.ok() && x.defined() && x.dtype() == dtype) return x;
  return Apply1("Cast", {x}, {{"DstT", dtype}}, "Cast");
}
Value Transpose(const Value& x, const std::vector<int64_t>& perm) {
  return Apply1("Transpose", {x}, {{"perm", perm}}, "transpose");
}

Value Slice(const Value& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  return Apply1("Slice", {x}, {{"begin", begin}, {"size", size}}, "Slice");
}
Value StridedSlice(const Value& x, const std::vector<int64_t>& begin,
                   const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                   int64_t begin_mask, int64_t end_mask, int64_t shrink_axis_mask) {
  AttrMap attrs{{"begin", begin}, {"end", end}, {"strides", strides}};
  if (begin_mask) attrs.Set("begin_mask", begin_mask);
  if (end_mask) attrs.Set("end_mask", end_mask);
  if (shrink_axis_mask) attrs.Set("shrink_axis_mask", shrink_axis_mask);
  return Apply1("StridedSlice", {x}, attrs, "strided_slice");
}
Value Concat(const std::vector<Value>& xs, int64_t axis) {
  return Apply1("ConcatV2", xs, {{"axis", axis}}, "concat");
}
Value Stack(const std::vector<Value>& xs, int64_t axis) {
  return Apply1("Pack", xs, {{"axis", axis}}, "stack");
}
std::vector<Value> Unstack(const Value& x, int64_t axis) {
  return Apply("Unpack", {x}, {{"axis", axis}}, "unstack");
}
Value Pad(const Value& x, const std::vector<int64_t>& paddings) {
  return Apply1("Pad", {x}, {{"paddings", paddings}}, "Pad");
}
Value Gather(const Value& params, const Value& indices) {
  return Apply1("GatherV2", {params, indices}, {{"axis", int64_t{0}}, {"batch_dims", int64_t{0}}},
                "GatherV2");
}
Value UnsortedSegmentSum(const Value& data, const Value& segment_ids, int64_t num_segments) {
  return Apply1("UnsortedSegmentSum", {data, segment_ids}, {{"num_segments", num_segments}},
                "UnsortedSegmentSum");
}

Value BiasAdd(const Value& x, const Value& bias) {
  return Apply1("BiasAdd", {x, bias}, {}, "BiasAdd");
}
Value Conv2D(const Value& x, const Value& filter, const std::vector<int64_t>& strides,
             const std::string& padding, const std::vector<int64_t>& dilations) {
  AttrMap attrs{{"strides", strides}, {"padding", padding}};
  if (!dilations.empty()) attrs.Set("dilations", dilations);
  return Apply1("Conv2D", {x, filter}, attrs, "Conv2D");
}
Value DepthwiseConv2D(const Value& x, const Value& filter, const std::vector<int64_t>& strides,
                      const std::string& padding, const std::vector<int64_t>& dilations) {
  AttrMap attrs{{"strides", strides}, {"padding", padding}};
  if (!dilations.empty()) attrs.Set("dilations", dilations);
  return Apply1("DepthwiseConv2dNative", {x, filter}, attrs, "depthwise");
}
Value MaxPool(const Value& x, const std::vector<int64_t>& ksize,
              const std::vector<int64_t>& strides, const std::string& padding) {
  return Apply1("MaxPool", {x}, {{"ksize", ksize}, {"strides", strides}, {"padding", padding}},
                "MaxPool");
}
Value AvgPool(const Value& x, const std::vector<int64_t>& ksize,
              const std::vector<int64_t>& strides, const std::string& padding) {
  return Apply1("AvgPool", {x}, {{"ksize", ksize}, {"strides", strides}, {"padding", padding}},
                "AvgPool");
}
Value Softmax(const Value& logits) { return Apply1("Softmax", {logits}, {}, "Softmax"); }
Value LogSoftmax(const Value& logits) { return Apply1("LogSoftmax", {logits}, {}, "LogSoftmax"); }
std::vector<Value> SparseSoftmaxCrossEntropyWithLogits(const Value& logits, const Value& labels) {
  return Apply("SparseSoftmaxCrossEntropyWithLogits", {logits, labels}, {},
               "SparseSoftmaxCrossEntropyWithLogits");
}

}  // namespace troupe::ops

namespace troupe {
namespace {
// A plain number as a scalar of the other operand's dtype.
Value Like(double v, const Value& other) {
  if (!other.ok()) return other;
  return ops::ScalarOf(v, other.defined() ? other.dtype() : DType::kFloat32);
}
}  // namespace

Value operator+(const Value& a, const Value& b) { return ops::Add(a, b); }
Value operator-(const Value& a, const Value& b) { return ops::Sub(a, b); }
Value operator*(const Value& a, const Value& b) { return ops::Mul(a, b); }
Value operator/(const Value& a, const Value& b) {
  if (a.ok() && a.defined() && IsInteger(a.dtype())) return ops::FloorDiv(a, b);
  return ops::Div(a, b);
}
Value operator-(const Value& a) { return ops::Neg(a); }
Value operator+(const Value& a, double b) { return ops::Add(a, Like(b, a)); }
Value operator-(const Value& a, double b) { return ops::Sub(a, Like(b, a)); }
Value operator*(const Value& a, double b) { return ops::Mul(a, Like(b, a)); }
Value operator/(const Value& a, double b) { return a / Like(b, a); }
Value operator+(double a, const Value& b) { return ops::Add(Like(a, b), b); }
Value operator-(double a, const Value& b) { return ops::Sub(Like(a, b), b); }
Value operator*(double a, const Value& b) { return ops::Mul(Like(a, b), b); }
Value operator/(double a, const Value& b) { return Like(a, b) / b; }
Value operator%(const Value& a, double b) { return ops::FloorMod(a, Like(b, a)); }
Value operator>(const Value& a, double b) { return ops::Greater(a, Like(b, a)); }
Value operator<(const Value& a, double b) { return ops::Less(a, Like(b, a)); }

}  // namespace troupe
