// Keras 3 activations (TF backend) as graph ops, so autodiff gives their gradients. Each
// follows the TF op sequence Keras runs (facts/keras-models.md §3.3), e.g. approximate GELU
// is 0.5*x*(1+tanh(0.7978845608028654*(x+0.044715*x^3))) in that order.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "graph/nn/initializers.h"
#include "graph/nn/module.h"
#include "graph/value.h"

namespace troupe::nn {

using ActivationFn = std::function<Value(const Value&)>;

// The activation a Keras config names ("relu", "gelu", "linear", ...); NotFound lists the
// supported names.
Result<ActivationFn> ActivationByName(const std::string& name);
std::vector<std::string> ActivationNames();

// approximate=false is tf.nn.gelu's form 0.5*x*erfc(-x/sqrt(2)).
Value Gelu(const Value& x, bool approximate);
Value Silu(const Value& x);
// Keras elu: x above zero, alpha * (exp(x) - 1) below.
Value Elu(const Value& x, double alpha = 1.0);
Value LeakyRelu(const Value& x, double negative_slope);
Value Relu6(const Value& x);
// TF's Softplus / Softsign / Selu kernels (kernels/activations_extra.cc), with TF's gradients.
Value Softplus(const Value& x);
Value Softsign(const Value& x);
Value Selu(const Value& x);
// Keras' TF backend: relu6(x + 3) / 6, and x * hard_sigmoid(x).
Value HardSigmoid(const Value& x);
Value HardSilu(const Value& x);
// x * tanh(softplus(x)).
Value Mish(const Value& x);
Value HardTanh(const Value& x);
Value Squareplus(const Value& x, double b);
Value Celu(const Value& x, double alpha);
// keras.layers.Softmax(axis): one axis as tf.nn.softmax (the axis swapped with the last one
// around the op when it is not last), several as exp(x - reduce_logsumexp(x, axes)).
Value KerasSoftmax(const Value& x, const std::vector<int64_t>& axes);
// exp(x - reduce_logsumexp(x, axes, keepdims)) (Keras' Softmax layer over several axes).
Value LogSumExpSoftmax(const Value& x, const std::vector<int64_t>& axes);
// keras.layers.PReLU: relu(x) + (-alpha) * relu(-x), alpha broadcast against x.
Value PRelu(const Value& x, const Value& alpha);

// keras.activations.relu(x, negative_slope, max_value, threshold) (the ReLU layer).
struct ReluOptions {
  std::optional<double> max_value;
  double negative_slope = 0.0;
  double threshold = 0.0;
};
Value KerasRelu(const Value& x, const ReluOptions& options);

// Activation / ReLU layers: weightless wrappers over the functions above.
class ActivationLayer : public Layer {
 public:
  ActivationLayer(std::string name, ActivationFn fn) : Layer(std::move(name)), fn_(std::move(fn)) {}

 protected:
  Value Call(const Value& x, bool) override { return fn_(x); }

 private:
  ActivationFn fn_;
};

// keras.layers.PReLU: alpha shaped like the input without its batch axis, size 1 on
// `shared_axes` (1-based input axes, as Keras takes them).
struct PReluOptions {
  Initializer alpha_initializer;  // zeros
  std::vector<int64_t> shared_axes;
  bool trainable = true;
};

class PReLU : public Layer {
 public:
  PReLU(std::string name, PReluOptions options);
  const Variable& alpha() const { return alpha_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool) override { return PRelu(x, alpha_.Read()); }

 private:
  PReluOptions options_;
  Variable alpha_;
};

}  // namespace troupe::nn
