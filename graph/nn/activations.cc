#include "graph/nn/activations.h"

#include <algorithm>
#include <map>

#include "graph/ops.h"
#include "graph/tracing_device.h"

namespace troupe::nn {
namespace {

Value C(double v, const Value& like) { return ops::ScalarOf(v, like.dtype()); }

const std::map<std::string, ActivationFn>& Registry() {
  static const auto* registry = new std::map<std::string, ActivationFn>{
      {"linear", [](const Value& x) { return x; }},
      {"relu", [](const Value& x) { return ops::Relu(x); }},
      {"relu6", [](const Value& x) { return Relu6(x); }},
      {"tanh", [](const Value& x) { return ops::Tanh(x); }},
      {"sigmoid", [](const Value& x) { return ops::Sigmoid(x); }},
      {"softmax", [](const Value& x) { return ops::Softmax(x); }},
      {"gelu", [](const Value& x) { return Gelu(x, /*approximate=*/false); }},
      {"silu", [](const Value& x) { return Silu(x); }},
      {"swish", [](const Value& x) { return Silu(x); }},
      {"elu", [](const Value& x) { return Elu(x); }},
      // keras.activations.leaky_relu's default slope (the LeakyReLU layer's is 0.3).
      {"leaky_relu", [](const Value& x) { return LeakyRelu(x, 0.2); }},
  };
  return *registry;
}

}  // namespace

std::vector<std::string> ActivationNames() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : Registry()) names.push_back(name);
  return names;
}

Result<ActivationFn> ActivationByName(const std::string& name) {
  auto it = Registry().find(name);
  if (it == Registry().end()) {
    std::string list;
    for (const std::string& n : ActivationNames()) list += (list.empty() ? "" : ", ") + n;
    return NotFoundError("activation '" + name + "' is not supported; supported: " + list);
  }
  return it->second;
}

Value Gelu(const Value& x, bool approximate) {
  if (!approximate && x.dtype() == DType::kFloat32 && UseCpuFusedOps()) {
    // The graph below as one op (CPU only, float32; kernels/gelu.cc), and one for its gradient.
    return Apply1("FusedGelu", {x}, {}, "Gelu");
  }
  if (!approximate) {
    // tf.nn.gelu(approximate=False) = 0.5*x*erfc(-x*0.7071067811865476), with
    // erfc(z) = 1 - erf(z) (no Erfc kernel; the difference is below float resolution of the
    // output's scale).
    Value z = ops::Mul(ops::Neg(x), C(0.7071067811865476, x));
    return ops::Mul(ops::Mul(C(0.5, x), x), ops::Sub(C(1.0, x), ops::Erf(z)));
  }
  Value x3 = ops::Pow(x, C(3.0, x));
  Value inner = ops::Mul(C(0.7978845608028654, x), ops::Add(x, ops::Mul(C(0.044715, x), x3)));
  return ops::Mul(ops::Mul(C(0.5, x), x), ops::Add(C(1.0, x), ops::Tanh(inner)));
}

Value Silu(const Value& x) { return ops::Mul(x, ops::Sigmoid(x)); }

Value Elu(const Value& x, double alpha) {
  Value e = ops::Elu(x);
  if (alpha == 1.0) return e;
  // Keras: where(x > 0, elu(x), alpha * elu(x)), as relu(e) + alpha * min(e, 0): one of the
  // two terms is zero, so the values are the select's (there is no SelectV2 kernel).
  return ops::Add(ops::Relu(e), ops::Mul(C(alpha, x), ops::Minimum(e, C(0.0, x))));
}

Value LeakyRelu(const Value& x, double negative_slope) { return ops::LeakyRelu(x, negative_slope); }

Value Relu6(const Value& x) { return ops::Relu6(x); }

Value KerasRelu(const Value& input, const ReluOptions& o) {
  Value x = input;
  if (o.negative_slope != 0.0 && !o.max_value && o.threshold == 0.0) {
    return LeakyRelu(x, o.negative_slope);
  }
  Value negative_part;
  if (o.negative_slope != 0.0) {
    negative_part = o.threshold != 0.0 ? ops::Relu(ops::Add(ops::Neg(x), C(o.threshold, x)))
                                       : ops::Relu(ops::Neg(x));
  }
  bool clip_max = o.max_value.has_value();
  if (o.threshold != 0.0) {
    // where(x > threshold, x, 0) as x * (x > threshold) (there is no SelectV2 kernel).
    x = ops::Mul(x, ops::Cast(ops::Greater(x, C(o.threshold, x)), x.dtype()));
  } else if (o.max_value && *o.max_value == 6.0) {
    x = Relu6(x);
    clip_max = false;
  } else {
    x = ops::Relu(x);
  }
  if (clip_max) x = ops::Minimum(ops::Maximum(x, C(0.0, x)), C(*o.max_value, x));
  if (o.negative_slope != 0.0) x = ops::Sub(x, ops::Mul(C(o.negative_slope, x), negative_part));
  return x;
}

}  // namespace troupe::nn
