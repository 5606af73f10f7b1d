#include "graph/nn/attention.h"

#include <cmath>

#include "graph/nn/layer_util.h"
#include "graph/ops.h"
#include "graph/precision.h"

namespace troupe::nn {
namespace {

Status NeedRank3(const char* what, const TensorShape& s) {
  if (s.unknown_rank() || s.rank() != 3 || s.dim(1) < 0 || s.dim(2) < 0) {
    return UnimplementedError(std::string("MultiHeadAttention supports ") + what +
                              " of shape (batch, length, features) with known length and "
                              "features (attention over axis 1), got " +
                              s.ToString());
  }
  return Status::OK();
}

// x [B, T, D] projected by kernel [D, N, H] (+ bias [N, H]) to [B, T, N, H].
Value Project(const Value& x, const MultiHeadAttention::Projection& p) {
  const TensorShape& ks = p.kernel.shape();
  const int64_t d = ks.dim(0), n = ks.dim(1), h = ks.dim(2);
  Value y = ops::MatMul(ops::Reshape(x, {-1, d}), ops::Reshape(p.kernel, {d, n * h}));
  y = ops::Reshape(y, {-1, x.shape().dim(1), n, h});
  if (p.bias.valid()) y = ops::Add(y, p.bias);
  return y;
}

}  // namespace

Status MultiHeadAttention::Projection::Build(const TensorShape& kernel_shape,
                                             const TensorShape& bias_shape,
                                             const Initializer& kernel_init,
                                             const Initializer& bias_init, bool use_bias,
                                             bool trainable) {
  TROUPE_ASSIGN_OR_RETURN(
      kernel, AddVariable("kernel", internal::InitValue(kernel_init, kernel_shape), trainable));
  if (use_bias) {
    TROUPE_ASSIGN_OR_RETURN(
        bias, AddVariable("bias", internal::InitValue(bias_init, bias_shape), trainable));
  }
  return Status::OK();
}

MultiHeadAttention::MultiHeadAttention(std::string name, MultiHeadAttentionOptions options)
    : Module(std::move(name)), options_(std::move(options)) {
  if (options_.value_dim <= 0) options_.value_dim = options_.key_dim;
  options_.kernel_initializers.resize(4);
  options_.bias_initializers.resize(4);
  for (int i = 0; i < 4; ++i) {
    auto& k = options_.kernel_initializers[static_cast<size_t>(i)];
    auto& b = options_.bias_initializers[static_cast<size_t>(i)];
    if (!k) k = GlorotUniform(NextDefaultSeed());
    if (!b) b = Zeros();
  }
  AddModule(&query_);
  AddModule(&key_);
  AddModule(&value_);
  if (options_.dropout > 0) {
    dropout_ = std::make_unique<Dropout>(
        "dropout", options_.dropout,
        options_.dropout_seed ? *options_.dropout_seed : NextDefaultSeed());
    AddModule(dropout_.get());
  }
  AddModule(&output_);
}

Status MultiHeadAttention::Build(const TensorShape& q, const TensorShape& v, const TensorShape& k) {
  if (built_) return Status::OK();
  TROUPE_RETURN_IF_ERROR(NeedRank3("query", q));
  TROUPE_RETURN_IF_ERROR(NeedRank3("value", v));
  TROUPE_RETURN_IF_ERROR(NeedRank3("key", k));
  if (options_.num_heads <= 0 || options_.key_dim <= 0) {
    return InvalidArgumentError("MultiHeadAttention '" + name() +
                                "' needs positive num_heads and key_dim");
  }
  const int64_t n = options_.num_heads, hk = options_.key_dim, hv = options_.value_dim;
  output_dim_ = options_.output_dim > 0 ? options_.output_dim : q.dim(2);
  const auto& ki = options_.kernel_initializers;
  const auto& bi = options_.bias_initializers;
  const bool b = options_.use_bias, t = options_.trainable;
  TROUPE_RETURN_IF_ERROR(query_.Build({q.dim(2), n, hk}, {n, hk}, ki[0], bi[0], b, t));
  TROUPE_RETURN_IF_ERROR(key_.Build({k.dim(2), n, hk}, {n, hk}, ki[1], bi[1], b, t));
  TROUPE_RETURN_IF_ERROR(value_.Build({v.dim(2), n, hv}, {n, hv}, ki[2], bi[2], b, t));
  TROUPE_RETURN_IF_ERROR(output_.Build({n, hv, output_dim_}, {output_dim_}, ki[3], bi[3], b, t));
  built_ = true;
  return Status::OK();
}

Value MultiHeadAttention::operator()(const Value& query, const Value& value, const Value& key_in,
                                     bool training, bool use_causal_mask) {
  const Value key = key_in.defined() ? key_in : value;
  if (Status s = FirstError({query, value, key}); !s.ok()) return Value::Error(s);
  if (!built_) {
    if (Status s = Build(query.shape(), value.shape(), key.shape()); !s.ok()) {
      return Value::Error(s.WithContext("building MultiHeadAttention '" + name() + "'"));
    }
  }
  Value q = Project(query, query_);                             // [B, T, N, Hk]
  Value k = Project(key, key_);                                 // [B, S, N, Hk]
  Value v = Project(value, value_);                             // [B, S, N, Hv]
  Value attended = Attend(q, k, v, training, use_causal_mask);  // [B, T, N, Hv]
  const int64_t n = options_.num_heads, hv = options_.value_dim;
  Value y = ops::MatMul(ops::Reshape(attended, {-1, n * hv}),
                        ops::Reshape(output_.kernel, {n * hv, output_dim_}));
  y = ops::Reshape(y, {-1, query.shape().dim(1), output_dim_});
  if (output_.bias.valid()) y = ops::Add(y, output_.bias);
  return y;
}

Value MultiHeadAttention::Attend(const Value& q, const Value& k, const Value& v, bool training,
                                 bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(options_.key_dim));
  const bool fast = options_.dropout == 0;
  Value qt = ops::Transpose(q, {0, 2, 1, 3});  // [B, N, T, H]
  if (!fast) qt = ops::Mul(qt, ops::ScalarOf(scale, qt.dtype()));
  // einsum("BTNH,BSNH->BNTS"): [B, N, T, H] x [B, N, S, H]^T.
  Value logits = ops::BatchMatMul(qt, ops::Transpose(k, {0, 2, 1, 3}), false, /*adj_y=*/true);
  if (fast) logits = ops::Mul(logits, ops::ScalarOf(scale, logits.dtype()));
  Value mask;
  if (causal) {
    const int64_t t = q.shape().dim(1), s = k.shape().dim(1);
    Tensor m = *Tensor::Allocate(DType::kBool, TensorShape{t, s});
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t j = 0; j < s; ++j) m.data<bool>()[i * s + j] = j <= i;
    }
    mask = ops::Cast(Value(m), logits.dtype());
    // ops.dot_product_attention fills with -0.7 * 3.38953e38; the Softmax layer with -1e9.
    // where(mask, logits, fill) as logits*mask + fill*(1-mask): the same values for finite
    // logits (there is no SelectV2 kernel).
    const double fill = fast ? 3.38953e38 * -0.7 : -1e9;
    Tensor f = *Tensor::Allocate(logits.dtype(), TensorShape{t, s});
    for (int64_t i = 0; i < t * s; ++i) {
      f.data<float>()[i] = m.data<bool>()[i] ? 0.0f : static_cast<float>(fill);
    }
    logits = ops::Add(ops::Mul(logits, mask), Value(f));
  }
  Value probs;
  {
    // Keras' fast path computes the softmax in float32.
    PrecisionScope float32(fast ? DType::kFloat32 : CurrentComputeDType());
    probs = ops::Softmax(logits);
  }
  if (!fast) {
    if (mask.defined()) probs = ops::Mul(probs, mask);
    probs = (*dropout_)(probs, training);
  }
  Value out = ops::BatchMatMul(probs, ops::Transpose(v, {0, 2, 1, 3}));  // [B, N, T, Hv]
  return ops::Transpose(out, {0, 2, 1, 3});
}

}  // namespace troupe::nn
