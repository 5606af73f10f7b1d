// Gradients of activations and neural-network ops (TF's nn_grad.py formulas).
#include <algorithm>

#include "graph/func_graph.h"
#include "graph/grad_util.h"
#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/tracing_device.h"

namespace troupe::internal {
namespace {
using V = std::vector<Value>;

// The inputs of the AddN node that made symbolic `v`, or none when another op made it.
std::vector<Value> SummandsOf(const Value& v) {
  if (!v.symbolic() || !v.ok()) return {};
  const Node& node = v.graph()->node(v.node_out().node);
  if (node.kind != NodeKind::kKernel || node.op != "AddN") return {};
  std::vector<Value> parts;
  for (NodeOut in : node.inputs) parts.push_back(Value::Symbolic(v.graph_ptr(), in));
  return parts;
}

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
  return std::vector<int64_t>(s.dims());
}
// Gradient of FusedBatchNormTraining (statistics per channel, over rows) or FusedLayerNorm
// (statistics per row, over the last axis); see RegisterNnGradients. `relu`: the op rectified
// its output (FusedBatchNormRelu*), whose grad op also takes beta to recompute that output's
// sign and mask dy. `bias`:
// the op normalized x + its 4th input (FusedBiasBatchNorm*), whose grad op takes the bias last
// and returns dbias too.
Status FusedNormGrad(const OpCall& c, const std::vector<Value>& dy, std::vector<Value>* dx,
                     const char* grad_op, bool per_row, bool relu = false, bool bias = false) {
  const Value& x = c.inputs[0];
  const Value& mean = c.outputs[1];
  Value dy0 = dy[0].defined() ? dy[0] : ops::ZerosLike(c.outputs[0]);
  AttrMap attrs;
  attrs.Set("epsilon", c.attrs.values().at("epsilon"));
  std::vector<Value> in = {dy0, x, c.inputs[1], mean, c.outputs[2]};
  if (relu) in.push_back(c.inputs[2]);  // beta: the grad op recomputes the output's sign
  if (bias) in.push_back(c.inputs[3]);
  std::vector<Value> g = Apply(grad_op, in, attrs, grad_op);
  const size_t outs = bias ? 4 : 3;
  if (g.size() != outs) return InternalError(std::string(grad_op) + ": wrong output count");
  Value dxv = g[0];
  if (dy[1].defined() || dy[2].defined()) {
    const TensorShape& s = x.shape();
    if (s.unknown_rank() || s.num_elements() < 0) {
      return UnimplementedError(std::string(c.op) +
                                " gradient of its statistics needs a fully "
                                "known input shape, got " +
                                s.ToString());
    }
    const int64_t last = s.dim(s.rank() - 1);
    const int64_t n = per_row ? last : (last == 0 ? 1 : s.num_elements() / last);
    auto stat = [&](const Value& v) { return per_row ? ops::ExpandDims(v, -1) : v; };
    const double inv_n = 1.0 / static_cast<double>(std::max<int64_t>(n, 1));
    const Value xb = bias ? ops::Add(x, c.inputs[3]) : x;  // what was normalized
    Value extra;
    auto add = [&](const Value& v) { extra = extra.defined() ? ops::Add(extra, v) : v; };
    if (dy[1].defined()) add(stat(ops::Mul(dy[1], ops::ScalarOf(inv_n, x.dtype()))));
    if (dy[2].defined()) {
      Value scale = stat(ops::Mul(dy[2], ops::ScalarOf(2 * inv_n, x.dtype())));
      add(ops::Mul(ops::Sub(xb, stat(mean)), scale));
    }
    dxv = ops::Add(dxv, extra);
    if (bias)
      g[3] = ops::Add(g[3], grad::ReduceLike(ops::Add(extra, ops::ZerosLike(x)), c.inputs[3]));
  }
  *dx = {dxv, g[1], g[2]};
  if (bias) dx->push_back(g[3]);
  return Status::OK();
}

// The gradient of Relu(a + b) with output y, for both a and b: dy is usually the tape's AddN of
// two contributions (the block's output feeds the next block and its skip path), whose sum
// AddReluGrad folds into the ReluGrad; the AddN node, unread, is pruned.
Value AddReluGradOf(const Value& dy, const Value& y) {
  std::vector<Value> parts = SummandsOf(dy);
  return parts.size() == 2 && UseCpuFusedOps()
             ? Apply1("AddReluGrad", {parts[0], parts[1], y}, {}, "AddReluGrad")
             : Apply1("ReluGrad", {dy, y}, {}, "ReluGrad");
}

// Fused[Bias]BatchNormAddReluTraining(x, gamma, beta[, bias], shortcut): the AddRelu gradient
// through the output, then the plain normalization's gradient of that, as the separate ops
// (same ops, same bits); the shortcut gets the AddRelu gradient.
Status FusedNormAddReluGrad(const OpCall& c, const std::vector<Value>& dy, std::vector<Value>* dx,
                            const char* grad_op, bool bias) {
  const Value& y = c.outputs[0];
  const Value g = dy[0].defined() ? AddReluGradOf(dy[0], y) : ops::ZerosLike(y);
  TROUPE_RETURN_IF_ERROR(FusedNormGrad(c, {g, dy[1], dy[2]}, dx, grad_op, /*per_row=*/false,
                                       /*relu=*/false, bias));
  dx->push_back(g);
  return Status::OK();
}
}  // namespace

void RegisterNnGradients() {
  // TF's gradient of ImageProjectiveTransformV3: dy transformed by the inverse transforms with
  // the same interpolation and fill mode, fill value 0; none for the transforms.
  RegisterGradient("ImageProjectiveTransform", [](const OpCall& c, const V& dy, V* dx) {
    AttrMap attrs = c.attrs;
    attrs.Set("fill_value", 0.0);
    attrs.Set("invert", !c.attrs.GetBoolOr("invert", false).value_or(false));
    *dx = {Apply1("ImageProjectiveTransform", {dy[0], c.inputs[1]}, attrs), Value()};
    return Status::OK();
  });
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
  // kernels/activations_extra.cc: TF's Softplus/Softsign (through inputs), Selu (outputs).
  RegisterGradient("Softplus", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("SoftplusGrad", {dy[0], c.inputs[0]}, {}, "SoftplusGrad")};
    return Status::OK();
  });
  RegisterGradient("Softsign", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("SoftsignGrad", {dy[0], c.inputs[0]}, {}, "SoftsignGrad")};
    return Status::OK();
  });
  RegisterGradient("Selu", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("SeluGrad", {dy[0], c.outputs[0]}, {}, "SeluGrad")};
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
  // TF's _Conv2DBackpropInputGrad: d filter = Conv2DBackpropFilter(dy, out_backprop),
  // d out_backprop = Conv2D(dy, filter) (Keras' Conv*DTranspose layers).
  RegisterGradient("Conv2DBackpropInput", [](const OpCall& c, const V& dy, V* dx) {
    const Value& f = c.inputs[0];
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> f_sizes,
                            SizesOf(f, "Conv2DBackpropInput gradient"));
    f_sizes[0] = f.shape().dim(0);
    AttrMap f_attrs = WindowAttrs(c);
    f_attrs.Set("filter_sizes", f_sizes);
    *dx = {Apply1("Conv2DBackpropFilter", {dy[0], c.inputs[1]}, f_attrs, "Conv2DBackpropFilter"),
           Apply1("Conv2D", {dy[0], f}, WindowAttrs(c), "Conv2D")};
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
  // The fused normalizations: dx, dgamma, dbeta from one *Grad op. Gradients reaching the
  // mean and variance outputs (rare: Keras only feeds batch norm's to its moving statistics)
  // add d mean / n and d variance * 2 (x - mean) / n to dx.
  RegisterGradient("FusedBatchNormTraining", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormGrad(c, dy, dx, "FusedBatchNormTrainingGrad", /*per_row=*/false);
  });
  RegisterGradient("FusedBatchNormReluTraining", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormGrad(c, dy, dx, "FusedBatchNormReluTrainingGrad", /*per_row=*/false,
                         /*relu=*/true);
  });
  RegisterGradient("FusedBiasBatchNormTraining", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormGrad(c, dy, dx, "FusedBiasBatchNormTrainingGrad", /*per_row=*/false,
                         /*relu=*/false, /*bias=*/true);
  });
  RegisterGradient("FusedBiasBatchNormReluTraining", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormGrad(c, dy, dx, "FusedBiasBatchNormReluTrainingGrad", /*per_row=*/false,
                         /*relu=*/true, /*bias=*/true);
  });
  RegisterGradient("FusedBatchNormAddReluTraining", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormAddReluGrad(c, dy, dx, "FusedBatchNormTrainingGrad", /*bias=*/false);
  });
  RegisterGradient("FusedBiasBatchNormAddReluTraining", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormAddReluGrad(c, dy, dx, "FusedBiasBatchNormTrainingGrad", /*bias=*/true);
  });
  // Relu(x + y): ReluGrad through the output, then the add's identity to both inputs.
  RegisterGradient("AddRelu", [](const OpCall& c, const V& dy, V* dx) {
    const Value g = AddReluGradOf(dy[0], c.outputs[0]);
    *dx = {g, g};
    return Status::OK();
  });
  RegisterGradient("FusedLayerNorm", [](const OpCall& c, const V& dy, V* dx) {
    return FusedNormGrad(c, dy, dx, "FusedLayerNormGrad", /*per_row=*/true);
  });
  RegisterGradient("Softmax", [](const OpCall& c, const V& dy, V* dx) {
    const Value& y = c.outputs[0];
    if (UseCpuFusedOps()) {
      // One op with the bits of the chain below (SoftmaxGrad has a CPU kernel only).
      *dx = {Apply1("SoftmaxGrad", {y, dy[0]}, {}, "SoftmaxGrad")};
      return Status::OK();
    }
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
