// Keras 3 activations (TF backend) as graph ops, so autodiff gives their gradients. Each
// follows the TF op sequence Keras runs (facts/keras-models.md §3.3), e.g. approximate GELU
// is 0.5*x*(1+tanh(0.7978845608028654*(x+0.044715*x^3))) in that order.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
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

}  // namespace troupe::nn
