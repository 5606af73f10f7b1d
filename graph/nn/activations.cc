#include "graph/nn/activations.h"

#include <algorithm>
#include <map>

#include "graph/ops.h"

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

// erf(x) as Eigen's float rational approximation (what TF's CPU Erf kernel evaluates), built
// from graph ops until the Erf kernel lands: x clamped to [-4, 4] (erf is +-1 in float beyond),
// then x * p(x^2) / q(x^2).
Value Erf(const Value& input) {
  Value x = ops::Maximum(ops::Minimum(input, C(4.0, input)), C(-4.0, input));
  Value x2 = ops::Mul(x, x);
  auto poly = [&](std::initializer_list<double> coefficients) {
    auto it = coefficients.begin();
    Value p = C(*it++, x);
    for (; it != coefficients.end(); ++it) p = ops::Add(ops::Mul(x2, p), C(*it, x));
    return p;
  };
  Value p = ops::Mul(x, poly({-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                              -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                              -1.60960333262415e-02}));
  Value q = poly({-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                  -7.37332916720468e-03, -1.42647390514189e-02});
  return ops::Div(p, q);
}

Value Gelu(const Value& x, bool approximate) {
  if (!approximate) {
    // tf.nn.gelu(approximate=False) = 0.5*x*erfc(-x*0.7071067811865476), erfc(z) = 1 - erf(z).
    Value z = ops::Mul(ops::Neg(x), C(0.7071067811865476, x));
    return ops::Mul(ops::Mul(C(0.5, x), x), ops::Sub(C(1.0, x), Erf(z)));
  }
  Value x3 = ops::Pow(x, C(3.0, x));
  Value inner = ops::Mul(C(0.7978845608028654, x), ops::Add(x, ops::Mul(C(0.044715, x), x3)));
  return ops::Mul(ops::Mul(C(0.5, x), x), ops::Add(C(1.0, x), ops::Tanh(inner)));
}

Value Silu(const Value& x) { return ops::Mul(x, ops::Sigmoid(x)); }

// The kernels have no SelectV2, so the piecewise activations are written with ops whose
// values equal the selects exactly for finite inputs.

Value Elu(const Value& x, double alpha) {
  // relu(x) + alpha * (exp(min(x, 0)) - 1): one of the terms is zero (the exp of min(x, 0)
  // keeps the branch finite for large x, so its zero gradient stays zero).
  Value negative = ops::Sub(ops::Exp(ops::Minimum(x, C(0.0, x))), C(1.0, x));
  if (alpha != 1.0) negative = ops::Mul(C(alpha, x), negative);
  return ops::Add(ops::Relu(x), negative);
}

Value LeakyRelu(const Value& x, double negative_slope) {
  // x > 0 ? x : slope*x, as max(x, slope*x) for slope <= 1 and min(x, slope*x) above.
  Value scaled = ops::Mul(x, C(negative_slope, x));
  return negative_slope <= 1.0 ? ops::Maximum(x, scaled) : ops::Minimum(x, scaled);
}

Value Relu6(const Value& x) { return ops::Minimum(ops::Relu(x), C(6.0, x)); }

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
    // where(x > threshold, x, 0) as x * (x > threshold).
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
