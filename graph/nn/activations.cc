#include "graph/nn/activations.h"

#include <algorithm>
#include <map>

#include "graph/nn/layer_util.h"
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
      {"selu", [](const Value& x) { return Selu(x); }},
      {"softplus", [](const Value& x) { return Softplus(x); }},
      {"softsign", [](const Value& x) { return Softsign(x); }},
      {"exponential", [](const Value& x) { return ops::Exp(x); }},
      {"hard_sigmoid", [](const Value& x) { return HardSigmoid(x); }},
      {"hard_silu", [](const Value& x) { return HardSilu(x); }},
      {"hard_swish", [](const Value& x) { return HardSilu(x); }},
      {"mish", [](const Value& x) { return Mish(x); }},
      {"log_softmax", [](const Value& x) { return ops::LogSoftmax(x); }},
      {"tanh_shrink", [](const Value& x) { return ops::Sub(x, ops::Tanh(x)); }},
      {"hard_tanh", [](const Value& x) { return HardTanh(x); }},
      {"squareplus", [](const Value& x) { return Squareplus(x, 4.0); }},
      {"celu", [](const Value& x) { return Celu(x, 1.0); }},
      // tf.math.log_sigmoid: -softplus(-x).
      {"log_sigmoid", [](const Value& x) { return ops::Neg(Softplus(ops::Neg(x))); }},
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

Value Softplus(const Value& x) { return Apply1("Softplus", {x}, {}, "Softplus"); }
Value Softsign(const Value& x) { return Apply1("Softsign", {x}, {}, "Softsign"); }
Value Selu(const Value& x) { return Apply1("Selu", {x}, {}, "Selu"); }

// relu6(x + 3) / 6, Keras' TF backend op order.
Value HardSigmoid(const Value& x) {
  return ops::Div(ops::Relu6(ops::Add(x, C(3.0, x))), C(6.0, x));
}

Value HardSilu(const Value& x) { return ops::Mul(x, HardSigmoid(x)); }

Value Mish(const Value& x) { return ops::Mul(x, ops::Tanh(Softplus(x))); }

// tf.clip_by_value(x, -1, 1): minimum(x, 1), then maximum(., -1).
Value HardTanh(const Value& x) { return ops::Maximum(ops::Minimum(x, C(1.0, x)), C(-1.0, x)); }

// (x + sqrt(x^2 + b)) / 2.
Value Squareplus(const Value& x, double b) {
  return ops::Div(ops::Add(x, ops::Sqrt(ops::Add(ops::Square(x), C(b, x)))), C(2.0, x));
}

// max(x, 0) + alpha * expm1(min(x, 0) / alpha), with expm1 as exp - 1 (no Expm1 kernel; the
// difference is below float resolution of the output's scale).
Value Celu(const Value& x, double alpha) {
  Value neg = ops::Div(ops::Minimum(x, C(0.0, x)), C(alpha, x));
  return ops::Add(ops::Maximum(x, C(0.0, x)),
                  ops::Mul(C(alpha, x), ops::Sub(ops::Exp(neg), C(1.0, x))));
}

Value KerasSoftmax(const Value& x, const std::vector<int64_t>& axes_in) {
  if (Status s = FirstError({x}); !s.ok()) return Value::Error(s);
  if (x.shape().unknown_rank()) {
    return Value::Error(InvalidArgumentError("Softmax needs an input of known rank"));
  }
  const int rank = x.shape().rank();
  std::vector<int64_t> axes;
  for (int64_t a : axes_in) {
    Result<int64_t> axis = internal::NormalizeAxis(a, rank, "Softmax");
    if (!axis.ok()) return Value::Error(axis.status());
    axes.push_back(*axis);
  }
  std::sort(axes.begin(), axes.end());
  if (axes.empty() || std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return Value::Error(InvalidArgumentError("Softmax axis must name distinct axes"));
  }
  if (axes.size() == 1) {
    if (axes[0] == rank - 1) return ops::Softmax(x);
    // tf.nn.softmax: swap the axis with the last, softmax, swap back.
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
    std::swap(perm[static_cast<size_t>(axes[0])], perm.back());
    return ops::Transpose(ops::Softmax(ops::Transpose(x, perm)), perm);
  }
  return LogSumExpSoftmax(x, axes);
}

Value LogSumExpSoftmax(const Value& x, const std::vector<int64_t>& axes) {
  // tf.math.reduce_logsumexp: the max held constant (finite inputs).
  Value mx = ops::StopGradient(ops::Max(x, axes, /*keep_dims=*/true));
  Value lse = ops::Add(ops::Log(ops::Sum(ops::Exp(ops::Sub(x, mx)), axes, true)), mx);
  return ops::Exp(ops::Sub(x, lse));
}

Value PRelu(const Value& x, const Value& alpha) {
  // Keras PReLU.call: relu(x) + (-alpha) * relu(-x).
  return ops::Add(ops::Relu(x), ops::Mul(ops::Neg(alpha), ops::Relu(ops::Neg(x))));
}

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

PReLU::PReLU(std::string name, PReluOptions options)
    : Layer(std::move(name)), options_(std::move(options)) {
  if (!options_.alpha_initializer) options_.alpha_initializer = Zeros();
}

Status PReLU::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank() || input_shape.rank() < 2) {
    return InvalidArgumentError("PReLU '" + name() + "' needs inputs of rank 2 or more, got " +
                                input_shape.ToString());
  }
  const int rank = input_shape.rank();
  std::vector<int64_t> dims;
  for (int i = 1; i < rank; ++i) dims.push_back(input_shape.dim(i));
  for (int64_t a : options_.shared_axes) {
    if (a < 1 || a >= rank) {
      return InvalidArgumentError("PReLU '" + name() + "' shared_axes entry " + std::to_string(a) +
                                  " is not an input axis in [1, " + std::to_string(rank - 1) + "]");
    }
    dims[static_cast<size_t>(a - 1)] = 1;
  }
  for (int64_t d : dims) {
    if (d < 0) {
      return InvalidArgumentError("PReLU '" + name() +
                                  "' needs known sizes on its unshared axes, got shape " +
                                  input_shape.ToString());
    }
  }
  TROUPE_ASSIGN_OR_RETURN(
      alpha_,
      AddVariable("alpha", internal::InitValue(options_.alpha_initializer, TensorShape(dims)),
                  options_.trainable));
  return Status::OK();
}

}  // namespace troupe::nn
