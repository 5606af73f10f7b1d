// Gradients of activations and neural-network ops (TF's nn_grad.py formulas).
#include "graph/grad_util.h"
#include "graph/gradients.h"
#include "graph/ops.h"

namespace troupe::internal {
namespace {
using V = std::vector<Value>;
}  // namespace

void RegisterNnGradients() {
  RegisterGradient("Relu", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {Apply1("ReluGrad", {dy[0], c.outputs[0]}, {}, "ReluGrad")};
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
