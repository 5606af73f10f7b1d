#include "graph/nn/recurrent.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "graph/nn/layer_util.h"
#include "graph/nn/regularization.h"
#include "graph/ops.h"

namespace troupe::nn {
namespace {

// Columns [k * units, (k + 1) * units) of a [batch, n * units] (or [n * units]) value.
Value Gate(const Value& z, int64_t k, int64_t units) {
  if (z.ok() && z.shape().rank() == 1) return ops::Slice(z, {k * units}, {units});
  return ops::Slice(z, {0, k * units}, {-1, units});
}

// Keeps `next` where the step mask m (float [batch, 1], 0 or 1) is 1, else `prev` (exact: one
// of the two products is an exact zero). An undefined `prev` stands for zeros.
Value Masked(const Value& m, const Value& next, const Value& prev) {
  Value kept = ops::Mul(next, m);
  if (!prev.defined()) return kept;
  return ops::Add(kept, ops::Mul(prev, ops::Sub(ops::Scalar(1.0f), m)));
}

}  // namespace

std::string Recurrent::CellName(RecurrentKind kind) {
  switch (kind) {
    case RecurrentKind::kSimpleRNN:
      return "simple_rnn_cell";
    case RecurrentKind::kLSTM:
      return "lstm_cell";
    case RecurrentKind::kGRU:
      return "gru_cell";
  }
  return "cell";
}

Recurrent::Recurrent(std::string name, RecurrentOptions options)
    : Layer(std::move(name)), options_(std::move(options)), cell_(CellName(options_.kind)) {
  AddModule(&cell_);
  if (!options_.activation) options_.activation = [](const Value& x) { return ops::Tanh(x); };
  if (!options_.recurrent_activation) {
    options_.recurrent_activation = [](const Value& x) { return ops::Sigmoid(x); };
  }
  if (!options_.kernel_initializer) options_.kernel_initializer = GlorotUniform(NextDefaultSeed());
  if (!options_.recurrent_initializer) {
    options_.recurrent_initializer = Orthogonal(1.0, NextDefaultSeed());
  }
  if (!options_.bias_initializer) options_.bias_initializer = Zeros();
  if (!options_.seed) options_.seed = NextDefaultSeed();
}

Value Recurrent::DropoutMask(const Value& shape, const std::vector<int64_t>& dims, double rate) {
  Value u = StatelessUniform(shape, dims, NextSeed(seed_state_), DType::kFloat32);
  Value scaled = ops::Mul(ops::OnesLike(u), ops::ScalarOf(1.0 / (1.0 - rate), DType::kFloat32));
  return ops::Mul(scaled, ops::Cast(ops::GreaterEqual(u, ops::ScalarOf(rate, DType::kFloat32)),
                                    DType::kFloat32));
}

int64_t Recurrent::gates() const {
  switch (options_.kind) {
    case RecurrentKind::kSimpleRNN:
      return 1;
    case RecurrentKind::kLSTM:
      return 4;
    case RecurrentKind::kGRU:
      return 3;
  }
  return 1;
}

Status Recurrent::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank() || input_shape.rank() != 3 || input_shape.dim(2) < 0) {
    return InvalidArgumentError("recurrent layer '" + name() +
                                "' expects [batch, time, features] inputs with known features, "
                                "got " +
                                input_shape.ToString());
  }
  const int64_t u = options_.units;
  if (u <= 0) return InvalidArgumentError("recurrent layer '" + name() + "' needs units > 0");
  const int64_t g = gates();
  const int64_t in = input_shape.dim(2);
  if (options_.dropout < 0 || options_.dropout >= 1 || options_.recurrent_dropout < 0 ||
      options_.recurrent_dropout >= 1) {
    return InvalidArgumentError("recurrent layer '" + name() +
                                "': dropout rates must be in [0, 1)");
  }
  if (options_.dropout > 0 || options_.recurrent_dropout > 0) {
    const int64_t seed = *options_.seed;
    TROUPE_ASSIGN_OR_RETURN(
        seed_state_, AddVariable(
                         "seed_generator_state", [seed]() -> Value { return SeedStateInit(seed); },
                         /*trainable=*/false));
  }
  TROUPE_ASSIGN_OR_RETURN(
      cell_.kernel_,
      cell_.AddVariable("kernel",
                        internal::InitValue(options_.kernel_initializer, TensorShape{in, g * u}),
                        options_.trainable));
  TROUPE_ASSIGN_OR_RETURN(
      cell_.recurrent_kernel_,
      cell_.AddVariable("recurrent_kernel",
                        internal::InitValue(options_.recurrent_initializer, TensorShape{u, g * u}),
                        options_.trainable));
  if (!options_.use_bias) return Status::OK();
  std::function<Value()> bias_init;
  if (options_.kind == RecurrentKind::kLSTM && options_.unit_forget_bias) {
    // Keras: concat(bias_init((u,)), ones((u,)), bias_init((2u,))).
    Initializer b = options_.bias_initializer;
    bias_init = [b, u]() -> Value {
      Result<Tensor> first = b(TensorShape{u}, DType::kFloat32);
      Result<Tensor> rest = b(TensorShape{2 * u}, DType::kFloat32);
      if (!first.ok()) return Value::Error(first.status());
      if (!rest.ok()) return Value::Error(rest.status());
      std::vector<float> v(static_cast<size_t>(4 * u), 1.0f);
      for (int64_t i = 0; i < u; ++i) {
        v[static_cast<size_t>(i)] = first->flat<float>()[static_cast<size_t>(i)];
      }
      for (int64_t i = 0; i < 2 * u; ++i) {
        v[static_cast<size_t>(2 * u + i)] = rest->flat<float>()[static_cast<size_t>(i)];
      }
      Result<Tensor> t = Tensor::FromVector<float>(v, TensorShape{4 * u});
      if (!t.ok()) return Value::Error(t.status());
      return Value(*t);
    };
  } else if (options_.kind == RecurrentKind::kGRU && options_.reset_after) {
    bias_init = internal::InitValue(options_.bias_initializer, TensorShape{2, g * u});
  } else {
    bias_init = internal::InitValue(options_.bias_initializer, TensorShape{g * u});
  }
  TROUPE_ASSIGN_OR_RETURN(cell_.bias_, cell_.AddVariable("bias", bias_init, options_.trainable));
  return Status::OK();
}

Value Recurrent::Call(const Value& x, bool training) { return CallMasked(x, Value(), training); }

Value Recurrent::CallMasked(const Value& x, const Value& mask, bool training) {
  if (!x.ok()) return x;
  if (!built()) {
    if (Status s = Build(x.shape()); !s.ok()) return Value::Error(s);
  }
  const TensorShape& s = x.shape();
  if (s.rank() != 3 || s.dim(1) <= 0) {
    return Value::Error(InvalidArgumentError(
        "recurrent layer '" + name() +
        "' expects [batch, time, features] inputs with a known, positive number of steps, got " +
        s.ToString()));
  }
  const int64_t steps = s.dim(1), features = s.dim(2), u = options_.units, g = gates();
  const RecurrentKind kind = options_.kind;
  const ActivationFn& act = options_.activation;
  const ActivationFn& ract = options_.recurrent_activation;

  // Dropout masks: drawn on every call (Keras' _maybe_config_dropout_masks), input mask first,
  // from ones like the first step's input and like the (zero) initial state; used in training.
  Value input_mask, recurrent_mask;
  if (options_.dropout > 0 || options_.recurrent_dropout > 0) {
    Value batch = ops::Slice(ops::Shape(x, DType::kInt32), {0}, {1});
    auto shape_of = [&](int64_t width) {
      return ops::Concat(
          {batch, ops::Const(Tensor::FromVector<int32_t>({static_cast<int32_t>(width)}))}, 0);
    };
    if (options_.dropout > 0) {
      input_mask = DropoutMask(shape_of(features), {s.dim(0), features}, options_.dropout);
    }
    if (options_.recurrent_dropout > 0) {
      recurrent_mask = DropoutMask(shape_of(u), {s.dim(0), u}, options_.recurrent_dropout);
    }
  }
  if (!training) input_mask = recurrent_mask = Value();

  // x W for every step: [batch * time, g u] -> [batch, time, g u] -> time x [batch, g u].
  Value x_in = input_mask.defined() ? ops::Mul(x, ops::ExpandDims(input_mask, 1)) : x;
  Value xw = ops::MatMul(ops::Reshape(x_in, {-1, features}), cell_.kernel_);
  Value input_bias, recurrent_bias;
  if (options_.use_bias) {
    Value b = cell_.bias_;
    if (kind == RecurrentKind::kGRU && options_.reset_after) {
      std::vector<Value> rows = ops::Unstack(b, 0);
      input_bias = rows[0];
      recurrent_bias = rows[1];
    } else {
      input_bias = b;
    }
    // SimpleRNN and GRU add the input bias to x W before the recurrent term (as Keras).
    if (kind != RecurrentKind::kLSTM) xw = ops::Add(xw, input_bias);
  }
  std::vector<Value> xs = ops::Unstack(ops::Reshape(xw, {-1, steps, g * u}), 1);
  std::vector<Value> ms;
  if (mask.defined()) {
    if (!mask.ok()) return mask;
    // Keras casts the mask to bool: nonzero keeps the step.
    Value m = mask.dtype() == DType::kBool
                  ? ops::Cast(mask, DType::kFloat32)
                  : ops::Cast(ops::NotEqual(mask, ops::ScalarOf(0, mask.dtype())), DType::kFloat32);
    if (m.shape().rank() != 2 || m.shape().dim(1) != steps) {
      return Value::Error(InvalidArgumentError("recurrent layer '" + name() + "': mask of shape " +
                                               m.shape().ToString() + " for inputs of shape " +
                                               s.ToString()));
    }
    ms = ops::Unstack(ops::ExpandDims(m, 2), 1);  // time x [batch, 1]
  }
  if (options_.go_backwards) {
    std::reverse(xs.begin(), xs.end());
    std::reverse(ms.begin(), ms.end());
  }

  Value rk = cell_.recurrent_kernel_;
  Value rk_zr, rk_h;  // GRU reset_after=false: U[:, :2u] and U[:, 2u:]
  if (kind == RecurrentKind::kGRU && !options_.reset_after) {
    rk_zr = ops::Slice(rk, {0, 0}, {u, 2 * u});
    rk_h = ops::Slice(rk, {0, 2 * u}, {u, u});
  }

  Value h, c;  // undefined: zeros (step 0)
  Value prev_out;
  std::vector<Value> outputs;
  outputs.reserve(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) {
    const Value& xt = xs[static_cast<size_t>(t)];
    Value h_new, c_new;
    switch (kind) {
      case RecurrentKind::kSimpleRNN: {
        Value hd = h.defined() && recurrent_mask.defined() ? ops::Mul(h, recurrent_mask) : h;
        Value z = h.defined() ? ops::Add(xt, ops::MatMul(hd, rk)) : xt;
        h_new = act(z);
        break;
      }
      case RecurrentKind::kLSTM: {
        Value z = h.defined() ? ops::Add(xt, ops::MatMul(h, rk)) : xt;
        if (input_bias.defined()) z = ops::Add(z, input_bias);
        Value i = ract(Gate(z, 0, u));
        Value f = ract(Gate(z, 1, u));
        Value ic = ops::Mul(i, act(Gate(z, 2, u)));
        c_new = c.defined() ? ops::Add(ops::Mul(f, c), ic) : ic;
        Value o = ract(Gate(z, 3, u));
        h_new = ops::Mul(o, act(c_new));
        break;
      }
      case RecurrentKind::kGRU: {
        Value xz = Gate(xt, 0, u), xr = Gate(xt, 1, u), xh = Gate(xt, 2, u);
        Value inner;  // h U (+ recurrent bias), undefined when exactly zero
        if (options_.reset_after) {
          if (h.defined()) inner = ops::MatMul(h, rk);
          if (recurrent_bias.defined()) {
            inner = inner.defined() ? ops::Add(inner, recurrent_bias) : recurrent_bias;
          }
        } else if (h.defined()) {
          inner = ops::MatMul(h, rk_zr);
        }
        Value z = ract(inner.defined() ? ops::Add(xz, Gate(inner, 0, u)) : xz);
        Value r = ract(inner.defined() ? ops::Add(xr, Gate(inner, 1, u)) : xr);
        Value rh;  // undefined when exactly zero
        if (options_.reset_after) {
          if (inner.defined()) {
            rh = ops::Mul(r, Gate(inner, 2, u));
          }
        } else if (h.defined()) {
          rh = ops::MatMul(ops::Mul(r, h), rk_h);
        }
        Value hh = act(rh.defined() ? ops::Add(xh, rh) : xh);
        Value keep_new = ops::Mul(ops::Sub(ops::Scalar(1.0f), z), hh);
        h_new = h.defined() ? ops::Add(ops::Mul(z, h), keep_new) : keep_new;
        break;
      }
    }
    Value out = h_new;
    if (!ms.empty()) {
      const Value& m = ms[static_cast<size_t>(t)];
      out = Masked(m, h_new, options_.zero_output_for_mask ? Value() : prev_out);
      h_new = Masked(m, h_new, h);
      if (c_new.defined()) c_new = Masked(m, c_new, c);
      prev_out = out;
    }
    h = h_new;
    c = c_new;
    if (options_.return_sequences || t + 1 == steps) outputs.push_back(out);
  }
  if (options_.return_sequences) return ops::Stack(outputs, 1);
  return outputs.back();
}

}  // namespace troupe::nn
