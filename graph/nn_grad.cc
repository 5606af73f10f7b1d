// Gradients of activations and neural-network ops (TF's nn_grad.py formulas).
#include "graph/grad_util.h"
#include "graph/gradients.h"
#include "graph/ops.h"

namespace troupe::internal {
namespace {
using V = std::vector<Value>;

// Window attributes carried over from the forward op.
AttrMap WindowAttrs(const OpCall& c) {
  AttrMap a;
  for (const char* name : {"strides", "padding", "ksize", "data_format", "dilations"}) {
    if (c.attrs.Has(name)) a.Set(name, c.attrs.values().at(name));
  }
  return a;
}

// A shape attribute for a backprop op: the static shape, with an unknown batch as -1.
Result<std::vector<int64_t>> SizesOf(const Value& x, const std::string& what) {
  const TensorShape& s = x.shape();
  if (s.unknown_rank() || s.rank() != 4) {
    return InvalidArgumentError(what + " needs a rank-4 input, got " + s.ToString());
  }
  for (int i = 1; i < 4; ++i) {
    if (s.dim(i) < 0) {
      return InvalidArgumentError(what + " needs known spatial and channel dims, got " +
                                  s.ToString());
    }
  }
  return s.dims();
}
}  // namespace

void RegisterNnGradients() {
  RegisterGradient("Relu", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("ReluGrad", {dy[0], c.outputs[0]}, {}, "ReluGrad")};
    return Status::OK();
  });
  // As TF: Relu6 and Elu differentiate through their outputs, LeakyRelu through its input.
  RegisterGradient("Relu6", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("Relu6Grad", {dy[0], c.outputs[0]}, {}, "Relu6Grad")};
    return Status::OK();
  });
  RegisterGradient("Elu", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("EluGrad", {dy[0], c.outputs[0]}, {}, "EluGrad")};
    return Status::OK();
  });
  RegisterGradient("LeakyRelu", [](const OpCall& c, const V& dy, V* dx) {
    AttrMap attrs;
    if (c.attrs.Has("alpha")) attrs.Set("alpha", c.attrs.values().at("alpha"));
    *dx = {Apply1("LeakyReluGrad", {dy[0], c.inputs[0]}, attrs, "LeakyReluGrad")};
    return Status::OK();
  });
  RegisterGradient("Tanh", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("TanhGrad", {c.outputs[0], dy[0]}, {}, "TanhGrad")};
    return Status::OK();
  });
  RegisterGradient("Sigmoid", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("SigmoidGrad", {c.outputs[0], dy[0]}, {}, "SigmoidGrad")};
    return Status::OK();
  });
  RegisterGradient("BiasAdd", [](const OpCall&, const V& dy, V* dx) {
    *dx = {dy[0], Apply1("BiasAddGrad", {dy[0]}, {}, "BiasAddGrad")};
    return Status::OK();
  });
  RegisterGradient("Conv2D", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& f = c.inputs[1];
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> in_sizes, SizesOf(x, "Conv2D gradient"));
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> f_sizes, SizesOf(f, "Conv2D gradient"));
    f_sizes[0] = f.shape().dim(0);
    AttrMap in_attrs = WindowAttrs(c);
    in_attrs.Set("input_sizes", in_sizes);
    AttrMap f_attrs = WindowAttrs(c);
    f_attrs.Set("filter_sizes", f_sizes);
    *dx = {Apply1("Conv2DBackpropInput", {f, dy[0]}, in_attrs, "Conv2DBackpropInput"),
           Apply1("Conv2DBackpropFilter", {x, dy[0]}, f_attrs, "Conv2DBackpropFilter")};
    return Status::OK();
  });
  RegisterGradient("DepthwiseConv2dNative", [](const OpCall& c, const V& dy, V* dx) {
    const Value& x = c.inputs[0];
    const Value& f = c.inputs[1];
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> in_sizes,
                            SizesOf(x, "DepthwiseConv2dNative gradient"));
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> f_sizes,
                            SizesOf(f, "DepthwiseConv2dNative gradient"));
    f_sizes[0] = f.shape().dim(0);
    AttrMap in_attrs = WindowAttrs(c);
    in_attrs.Set("input_sizes", in_sizes);
    AttrMap f_attrs = WindowAttrs(c);
    f_attrs.Set("filter_sizes", f_sizes);
    *dx = {Apply1("DepthwiseConv2dNativeBackpropInput", {f, dy[0]}, in_attrs,
                  "DepthwiseConv2dNativeBackpropInput"),
           Apply1("DepthwiseConv2dNativeBackpropFilter", {x, dy[0]}, f_attrs,
                  "DepthwiseConv2dNativeBackpropFilter")};
    return Status::OK();
  });
  RegisterGradient("MaxPool", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {
        Apply1("MaxPoolGrad", {c.inputs[0], c.outputs[0], dy[0]}, WindowAttrs(c), "MaxPoolGrad")};
    return Status::OK();
  });
  RegisterGradient("AvgPool", [](const OpCall& c, const V& dy, V* dx) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SizesOf(c.inputs[0], "AvgPool gradient"));
    AttrMap attrs = WindowAttrs(c);
    attrs.Set("orig_input_shape", sizes);
    *dx = {Apply1("AvgPoolGrad", {dy[0]}, attrs, "AvgPoolGrad")};
    return Status::OK();
  });
  RegisterGradient("Softmax", [](const OpCall& c, const V& dy, V* dx) {
    const Value& y = c.outputs[0];
    Value sum = ops::Sum(ops::Mul(dy[0], y), {-1}, /*keep_dims=*/true);
    *dx = {ops::Mul(ops::Sub(dy[0], sum), y)};
    return Status::OK();
  });
  RegisterGradient("LogSoftmax", [](const OpCall& c, const V& dy, V* dx) {
    Value softmax = ops::Exp(c.outputs[0]);
    *dx = {ops::Sub(dy[0], ops::Mul(ops::Sum(dy[0], {-1}, true), softmax))};
    return Status::OK();
  });
  RegisterGradient("SoftmaxCrossEntropyWithLogits", [](const OpCall& c, const V& dy, V* dx) {
    // Gradients for the logits only (as TF without second-order terms); labels get none.
    if (!dy[0].defined()) {
      *dx = {Value(), Value()};
      return Status::OK();
    }
    *dx = {ops::Mul(ops::ExpandDims(dy[0], -1), c.outputs[1]), Value()};
    return Status::OK();
  });
  RegisterGradient("SparseSoftmaxCrossEntropyWithLogits", [](const OpCall& c, const V& dy, V* dx) {
    // d(loss)/d(logits) = backprop (the op's second output) scaled per row; labels get none.
    if (!dy[0].defined()) {
      *dx = {Value(), Value()};
      return Status::OK();
    }
    *dx = {ops::Mul(ops::ExpandDims(dy[0], -1), c.outputs[1]), Value()};
    return Status::OK();
  });
}

}  // namespace troupe::internal
