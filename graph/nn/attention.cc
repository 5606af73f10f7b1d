#include "graph/nn/attention.h"

#include <algorithm>
#include <cmath>

#include "graph/nn/activations.h"
#include "graph/nn/layer_util.h"
#include "graph/ops.h"
#include "graph/precision.h"

namespace troupe::nn {
namespace {

Status NeedKnownShape(const char* what, const TensorShape& s) {
  if (s.unknown_rank() || s.rank() < 3) {
    return UnimplementedError(std::string("MultiHeadAttention supports ") + what +
                              " of shape (batch, ..., features) with rank 3 or more, got " +
                              s.ToString());
  }
  for (int i = 1; i < s.rank(); ++i) {
    if (s.dim(i) < 0) {
      return UnimplementedError(std::string("MultiHeadAttention needs ") + what +
                                " with known sizes after the batch axis, got " + s.ToString());
    }
  }
  return Status::OK();
}

// x [B, m..., D] projected by kernel [D, N, H] (+ bias [N, H]) to [B, m..., N, H].
Value Project(const Value& x, const MultiHeadAttention::Projection& p) {
  const TensorShape& ks = p.kernel.shape();
  const int64_t d = ks.dim(0), n = ks.dim(1), h = ks.dim(2);
  Value y = ops::MatMul(ops::Reshape(x, {-1, d}), ops::Reshape(p.kernel, {d, n * h}));
  std::vector<int64_t> shape = {-1};
  for (int i = 1; i + 1 < x.shape().rank(); ++i) shape.push_back(x.shape().dim(i));
  shape.push_back(n);
  shape.push_back(h);
  y = ops::Reshape(y, shape);
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
  TROUPE_RETURN_IF_ERROR(NeedKnownShape("query", q));
  TROUPE_RETURN_IF_ERROR(NeedKnownShape("value", v));
  TROUPE_RETURN_IF_ERROR(NeedKnownShape("key", k));
  rank_ = q.rank();
  if (v.rank() != rank_ || k.rank() != rank_) {
    return InvalidArgumentError("MultiHeadAttention '" + name() +
                                "' needs query, value and key of one rank, got " + q.ToString() +
                                ", " + v.ToString() + ", " + k.ToString());
  }
  axes_.clear();
  if (options_.attention_axes.empty()) {
    for (int64_t a = 1; a < rank_ - 1; ++a) axes_.push_back(a);
  }
  for (int64_t a : options_.attention_axes) {
    const int64_t axis = a >= 0 ? a : a + rank_;  // Keras: (projected rank - 1) + a
    if (axis < 1 || axis > rank_ - 2) {
      return InvalidArgumentError("MultiHeadAttention '" + name() + "' attention axis " +
                                  std::to_string(a) +
                                  " is not an axis between the batch and "
                                  "the features of rank-" +
                                  std::to_string(rank_) + " inputs");
    }
    axes_.push_back(axis);
  }
  std::sort(axes_.begin(), axes_.end());
  if (std::adjacent_find(axes_.begin(), axes_.end()) != axes_.end()) {
    return InvalidArgumentError("MultiHeadAttention '" + name() +
                                "' attention_axes must name distinct axes");
  }
  for (int64_t i = 1; i < rank_ - 1; ++i) {
    const bool attended = std::find(axes_.begin(), axes_.end(), i) != axes_.end();
    const int ii = static_cast<int>(i);
    if ((!attended && (q.dim(ii) != k.dim(ii) || q.dim(ii) != v.dim(ii))) ||
        k.dim(ii) != v.dim(ii)) {
      return InvalidArgumentError(
          "MultiHeadAttention '" + name() +
          "': query, key and value must agree on the axes attention does not run over, and "
          "key and value on all, got " +
          q.ToString() + ", " + k.ToString() + ", " + v.ToString());
    }
  }
  if (options_.num_heads <= 0 || options_.key_dim <= 0) {
    return InvalidArgumentError("MultiHeadAttention '" + name() +
                                "' needs positive num_heads and key_dim");
  }
  const int64_t n = options_.num_heads, hk = options_.key_dim, hv = options_.value_dim;
  output_dim_ = options_.output_dim > 0 ? options_.output_dim : q.dim(rank_ - 1);
  const auto& ki = options_.kernel_initializers;
  const auto& bi = options_.bias_initializers;
  const bool b = options_.use_bias, t = options_.trainable;
  const int last = rank_ - 1;
  TROUPE_RETURN_IF_ERROR(query_.Build({q.dim(last), n, hk}, {n, hk}, ki[0], bi[0], b, t));
  TROUPE_RETURN_IF_ERROR(key_.Build({k.dim(last), n, hk}, {n, hk}, ki[1], bi[1], b, t));
  TROUPE_RETURN_IF_ERROR(value_.Build({v.dim(last), n, hv}, {n, hv}, ki[2], bi[2], b, t));
  TROUPE_RETURN_IF_ERROR(output_.Build({n, hv, output_dim_}, {output_dim_}, ki[3], bi[3], b, t));
  built_ = true;
  return Status::OK();
}

Value MultiHeadAttention::operator()(const Value& query, const Value& value, const Value& key_in,
                                     bool training, bool use_causal_mask,
                                     const std::vector<Value>& masks) {
  const Value key = key_in.defined() ? key_in : value;
  if (Status s = FirstError({query, value, key}); !s.ok()) return Value::Error(s);
  if (!built_) {
    if (Status s = Build(query.shape(), value.shape(), key.shape()); !s.ok()) {
      return Value::Error(s.WithContext("building MultiHeadAttention '" + name() + "'"));
    }
  }
  Value q = Project(query, query_);  // [B, T, N, Hk]
  Value k = Project(key, key_);      // [B, S, N, Hk]
  Value v = Project(value, value_);  // [B, S, N, Hv]
  bool masked = false;
  for (const Value& m : masks) masked = masked || m.defined();
  if (masked && rank_ != 3) {
    return Value::Error(UnimplementedError(
        "MultiHeadAttention '" + name() +
        "': Keras masks are supported on (batch, length, features) inputs only"));
  }
  Value attended = rank_ == 3 ? Attend(q, k, v, training, use_causal_mask,
                                       masked ? masks : std::vector<Value>{})  // [B, T, N, Hv]
                              : AttendAxes(q, k, v, training, use_causal_mask);
  const int64_t n = options_.num_heads, hv = options_.value_dim;
  Value y = ops::MatMul(ops::Reshape(attended, {-1, n * hv}),
                        ops::Reshape(output_.kernel, {n * hv, output_dim_}));
  std::vector<int64_t> out_shape = {-1};
  for (int i = 1; i + 1 < rank_; ++i) out_shape.push_back(query.shape().dim(i));
  out_shape.push_back(output_dim_);
  y = ops::Reshape(y, out_shape);
  if (output_.bias.valid()) y = ops::Add(y, output_.bias);
  return y;
}

Value MultiHeadAttention::Attend(const Value& q, const Value& k, const Value& v, bool training,
                                 bool causal, const std::vector<Value>& masks) {
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
  if (!masks.empty()) {
    // Keras' _compute_attention_mask: query_mask[:, :, None] & value_mask[:, None, :] &
    // key_mask[:, None, :] (& the causal mask), [B, T, S] broadcast over the heads; applied
    // like the causal mask (here after it: where(a & b) = where(b) of where(a), the fill being
    // the same). In float32: 0/1 products are the logical and.
    PrecisionScope float32(DType::kFloat32);
    Value keep;
    auto join = [&keep](const Value& m) { keep = keep.defined() ? ops::Mul(keep, m) : m; };
    auto as_f32 = [](const Value& m) { return ops::Cast(m, DType::kFloat32); };
    if (masks.size() > 0 && masks[0].defined()) join(ops::ExpandDims(as_f32(masks[0]), -1));
    for (size_t i = 1; i < masks.size() && i < 3; ++i) {
      if (masks[i].defined()) join(ops::ExpandDims(as_f32(masks[i]), -2));
    }
    if (keep.defined()) {
      keep = ops::ExpandDims(keep, 1);  // [B, 1, T|1, S|1]
      const double fill = fast ? 3.38953e38 * -0.7 : -1e9;
      logits = ops::Add(ops::Mul(logits, keep),
                        ops::Mul(ops::ScalarOf(fill, DType::kFloat32),
                                 ops::Sub(ops::ScalarOf(1.0, DType::kFloat32), keep)));
      mask = mask.defined() ? ops::Mul(mask, keep) : keep;
    }
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

// Projected q [B, m..., N, Hk], k/v [B, s..., N, H*] (rank r + 1): the axes not attended and
// the heads are batch axes (Keras' batch_dims: 0, the unattended axes, N), flattened with the
// query (key) attention axes into [Bf, Tq, Hk] x [Bf, Tk, Hk]; scores [Bf, Tq, Tk] hold Keras'
// (batch dims, query attention dims, key attention dims) in its order.
Value MultiHeadAttention::AttendAxes(const Value& q, const Value& k, const Value& v, bool training,
                                     bool causal) {
  const int pr = rank_ + 1;  // projected rank
  std::vector<int64_t> batch_axes = {0}, perm;
  for (int64_t i = 1; i < rank_ - 1; ++i) {
    if (std::find(axes_.begin(), axes_.end(), i) == axes_.end()) batch_axes.push_back(i);
  }
  batch_axes.push_back(pr - 2);  // heads
  perm = batch_axes;
  perm.insert(perm.end(), axes_.begin(), axes_.end());
  perm.push_back(pr - 1);
  auto flatten = [&](const Value& x) {
    Value t = ops::Transpose(x, perm);
    int64_t len = 1;
    for (int64_t a : axes_) len *= x.shape().dim(static_cast<int>(a));
    return ops::Reshape(t, {-1, len, x.shape().dim(pr - 1)});
  };
  if (causal && axes_ != std::vector<int64_t>{1}) {
    return Value::Error(UnimplementedError(
        "MultiHeadAttention '" + name() +
        "': use_causal_mask with attention over axes other than axis 1 alone is not supported"));
  }
  // Keras' non-fused path: query * 1/sqrt(key_dim), einsum, masked Softmax layer, Dropout.
  const double scale = 1.0 / std::sqrt(static_cast<double>(options_.key_dim));
  Value qf = flatten(ops::Mul(q, ops::ScalarOf(scale, q.dtype())));
  Value kf = flatten(k);
  Value vf = flatten(v);
  Value logits = ops::BatchMatMul(qf, kf, false, /*adj_y=*/true);  // [Bf, Tq, Tk]
  const int64_t tq = qf.shape().dim(1), tk = kf.shape().dim(1);
  Value mask;
  if (causal) {
    Tensor m = *Tensor::Allocate(DType::kFloat32, TensorShape{tq, tk});
    Tensor f = *Tensor::Allocate(DType::kFloat32, TensorShape{tq, tk});
    for (int64_t i = 0; i < tq; ++i) {
      for (int64_t j = 0; j < tk; ++j) {
        m.data<float>()[i * tk + j] = j <= i ? 1.0f : 0.0f;
        f.data<float>()[i * tk + j] = j <= i ? 0.0f : -1e9f;
      }
    }
    // where(mask, logits, -1e9) as logits * mask + fill (the same values for finite logits).
    mask = Value(m);
    logits = ops::Add(ops::Mul(logits, mask), Value(f));
  }
  Value probs;
  if (axes_.size() == 1) {
    probs = ops::Softmax(logits);
  } else {
    // Keras' Softmax over several axes (here flattened into one).
    probs = LogSumExpSoftmax(logits, {-1});
  }
  if (mask.defined()) probs = ops::Mul(probs, mask);
  if (dropout_) probs = (*dropout_)(probs, training);
  Value out = ops::BatchMatMul(probs, vf);  // [Bf, Tq, Hv]
  // Back to [B, unattended..., N, attended..., Hv], then to [B, m..., N, Hv].
  std::vector<int64_t> shape = {-1};
  for (size_t i = 1; i < batch_axes.size(); ++i) {
    shape.push_back(q.shape().dim(static_cast<int>(batch_axes[i])));
  }
  for (int64_t a : axes_) shape.push_back(q.shape().dim(static_cast<int>(a)));
  shape.push_back(v.shape().dim(pr - 1));
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = i;
  return ops::Transpose(ops::Reshape(out, shape), inverse);
}

// --------------------------------------------------------------------- ScoreAttention

ScoreAttention::ScoreAttention(std::string name, ScoreAttentionOptions options)
    : Module(std::move(name)), options_(std::move(options)) {
  if (!options_.scale_initializer) {
    options_.scale_initializer = options_.mode == ScoreAttentionOptions::Mode::kAdditive
                                     ? GlorotUniform(NextDefaultSeed())
                                     : Ones();
  }
  if (options_.dropout > 0) {
    dropout_ = std::make_unique<Dropout>("dropout", options_.dropout, options_.dropout_seed);
    AddModule(dropout_.get());
  }
}

Status ScoreAttention::Build(const TensorShape& q, const TensorShape& v, const TensorShape& k) {
  const bool known = !q.unknown_rank() && q.rank() >= 3 && !v.unknown_rank() &&
                     v.rank() == q.rank() && !k.unknown_rank() && k.rank() == q.rank();
  bool dims_known = known;
  for (int i = q.rank() - 2; known && i < q.rank(); ++i) {
    dims_known = dims_known && q.dim(i) >= 0 && k.dim(i) >= 0 && v.dim(i) >= 0;
  }
  if (!dims_known) {
    return UnimplementedError("Keras attention layer '" + name() +
                              "' supports query, value and key of one rank (3 or more: batch "
                              "axes, length, features) with known length and features, got " +
                              q.ToString() + ", " + v.ToString() + ", " + k.ToString());
  }
  const int r = q.rank();
  if (q.dim(r - 1) != k.dim(r - 1)) {
    return InvalidArgumentError("Keras attention layer '" + name() + "': query features " +
                                std::to_string(q.dim(r - 1)) + " != key features " +
                                std::to_string(k.dim(r - 1)));
  }
  if (k.dim(r - 2) != v.dim(r - 2)) {
    return InvalidArgumentError("Keras attention layer '" + name() + "': key length " +
                                std::to_string(k.dim(r - 2)) + " != value length " +
                                std::to_string(v.dim(r - 2)));
  }
  using Mode = ScoreAttentionOptions::Mode;
  if (options_.use_scale) {
    const TensorShape shape =
        options_.mode == Mode::kAdditive ? TensorShape{q.dim(r - 1)} : TensorShape();
    TROUPE_ASSIGN_OR_RETURN(
        scale_, AddVariable("scale", internal::InitValue(options_.scale_initializer, shape),
                            options_.trainable));
  }
  if (options_.mode == Mode::kConcat) {
    TROUPE_ASSIGN_OR_RETURN(
        concat_score_weight_,
        AddVariable("concat_score_weight", internal::InitValue(Ones(), TensorShape()),
                    options_.trainable));
  }
  built_ = true;
  return Status::OK();
}

Value ScoreAttention::operator()(const Value& query, const Value& value, const Value& key_in,
                                 bool training, bool use_causal_mask, const Value& q_mask,
                                 const Value& v_mask) {
  const Value key = key_in.defined() ? key_in : value;
  if (Status s = FirstError({query, value, key}); !s.ok()) return Value::Error(s);
  if (!built_) {
    if (Status s = Build(query.shape(), value.shape(), key.shape()); !s.ok()) {
      return Value::Error(s.WithContext("building Keras attention layer '" + name() + "'"));
    }
  }
  if ((q_mask.defined() || v_mask.defined()) && query.shape().rank() != 3) {
    return Value::Error(UnimplementedError("Keras attention layer '" + name() +
                                           "': masks are supported on (batch, length, "
                                           "features) inputs only"));
  }
  using Mode = ScoreAttentionOptions::Mode;
  Value scores;
  if (options_.mode == Mode::kDot) {
    // ops.matmul(query, ops.swapaxes(key, -2, -1)) [* scale].
    std::vector<int64_t> swap;
    for (int i = 0; i < key.shape().rank(); ++i) swap.push_back(i);
    std::swap(swap[swap.size() - 2], swap.back());
    scores = ops::BatchMatMul(query, ops::Transpose(key, swap));
    if (options_.use_scale) scores = ops::Mul(scores, scale_.Read());
  } else {
    Value sum = ops::Add(ops::ExpandDims(query, -2), ops::ExpandDims(key, -3));  // [B, Tq, Tv, D]
    if (options_.mode == Mode::kConcat) {
      if (options_.use_scale) sum = ops::Mul(scale_.Read(), sum);
      scores = ops::Mul(concat_score_weight_.Read(), ops::Sum(ops::Tanh(sum), {-1}));
    } else {
      Value t = ops::Tanh(sum);
      // scale * tanh(...); without use_scale Keras multiplies by the Python float 1.0.
      if (options_.use_scale) t = ops::Mul(scale_.Read(), t);
      scores = ops::Sum(t, {-1});
    }
  }
  if (use_causal_mask || v_mask.defined()) {
    // ops.where(padding_mask, scores - max_value, scores) as scores - max_value * padding, with
    // padding 1 on the masked entries and 0 elsewhere: the same values. The score mask is
    // v_mask [B, 1, Tv], the causal mask [1, Tq, Tv] (column <= row), or both (and: product).
    const int r = query.shape().rank();
    const int64_t tq = query.shape().dim(r - 2), tv = key.shape().dim(r - 2);
    const float max_value = CurrentComputeDType() == DType::kHalf ? 65504.0f : 1.0e9f;
    Value keep;
    if (use_causal_mask) {
      Tensor c = *Tensor::Allocate(DType::kFloat32, TensorShape{1, tq, tv});
      for (int64_t i = 0; i < tq; ++i) {
        for (int64_t j = 0; j < tv; ++j) c.data<float>()[i * tv + j] = j <= i ? 1.0f : 0.0f;
      }
      keep = Value(c);
    }
    if (v_mask.defined()) {
      Value vm = ops::ExpandDims(ops::Cast(v_mask, DType::kFloat32), -2);  // [B, 1, Tv]
      keep = keep.defined() ? ops::Mul(vm, keep) : vm;
    }
    Value padding = ops::Sub(ops::ScalarOf(1.0, DType::kFloat32), keep);
    scores = ops::Sub(scores, ops::Mul(ops::ScalarOf(max_value, DType::kFloat32), padding));
  }
  Value weights = ops::Softmax(scores);
  if (dropout_) weights = (*dropout_)(weights, training);
  Value out = ops::BatchMatMul(weights, value);
  // ops.where(q_mask[..., None], out, 0) as out * q_mask (the same values).
  if (q_mask.defined()) out = ops::Mul(out, ops::ExpandDims(ops::Cast(q_mask, out.dtype()), -1));
  return out;
}

}  // namespace troupe::nn
