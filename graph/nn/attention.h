// keras.layers.MultiHeadAttention (TF backend) on (B, T, D) inputs, attention over axis 1, or
// on (B, d1, ..., dk, D) inputs with attention over `attention_axes` (Keras' einsum path: the
// other axes and the heads act as batch axes, softmax over every key attention axis at once as
// exp(x - logsumexp(x)), scale applied to the query first, causal masks on axis 1 only).
// Variables, in Keras' order: query/{kernel (Dq, N, key_dim), bias (N, key_dim)},
// key/{kernel (Dk, N, key_dim), bias}, value/{kernel (Dv, N, value_dim), bias},
// attention_output/{kernel (N, value_dim, Dout), bias (Dout,)}.
//
// Keras rounds two ways (facts/keras-models.md §3.4), and so does this layer:
// - dropout == 0 (ops.dot_product_attention): logits = (q k^T) * scale, causal entries set to
//   -0.7 * 3.38953e38, softmax;
// - dropout > 0: logits = (q * scale) k^T, masked entries set to -1e9, softmax, masked
//   probabilities zeroed, Dropout on the probabilities (training only).
// scale = 1/sqrt(key_dim) computed in double.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/nn/initializers.h"
#include "graph/nn/layers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

struct MultiHeadAttentionOptions {
  int64_t num_heads = 1;
  int64_t key_dim = 0;
  int64_t value_dim = 0;   // 0: key_dim
  int64_t output_dim = 0;  // 0: the query's last dim
  double dropout = 0.0;
  bool use_bias = true;
  bool trainable = true;
  std::optional<int64_t> dropout_seed;
  // Keras attention_axes as given (negative: counted from the input's rank); empty: every axis
  // between the batch and the feature axes (Keras' None).
  std::vector<int64_t> attention_axes;
  // Per projection, in the order query, key, value, attention_output (defaults: GlorotUniform
  // with NextDefaultSeed(), zeros).
  std::vector<Initializer> kernel_initializers;
  std::vector<Initializer> bias_initializers;
};

class MultiHeadAttention : public Module {
 public:
  // One EinsumDense projection: a kernel and an optional bias.
  class Projection : public Module {
   public:
    using Module::Module;
    Status Build(const TensorShape& kernel_shape, const TensorShape& bias_shape,
                 const Initializer& kernel_init, const Initializer& bias_init, bool use_bias,
                 bool trainable);
    Variable kernel, bias;
  };

  MultiHeadAttention(std::string name, MultiHeadAttentionOptions options);
  // `key` defaults to `value` (undefined Value). Builds on the first call. `masks`: Keras masks
  // of query, value, key (float [B, T] 1 keep / 0 masked, undefined for none; the key's is the
  // value's when no key is given); rank-3 inputs only.
  Value operator()(const Value& query, const Value& value, const Value& key, bool training,
                   bool use_causal_mask, const std::vector<Value>& masks = {});
  Status Build(const TensorShape& query, const TensorShape& value, const TensorShape& key);

  const Projection& query() const { return query_; }
  const Projection& key() const { return key_; }
  const Projection& value() const { return value_; }
  const Projection& output() const { return output_; }

 private:
  Value Attend(const Value& q, const Value& k, const Value& v, bool training, bool causal,
               const std::vector<Value>& masks);
  // Inputs of rank > 3 (projected rank > 4): Keras' einsum path over attention_axes.
  Value AttendAxes(const Value& q, const Value& k, const Value& v, bool training, bool causal);

  MultiHeadAttentionOptions options_;
  Projection query_{"query"}, key_{"key"}, value_{"value"}, output_{"attention_output"};
  std::unique_ptr<Dropout> dropout_;
  bool built_ = false;
  int64_t output_dim_ = 0;
  int rank_ = 3;               // the inputs' rank
  std::vector<int64_t> axes_;  // attention axes, normalized and sorted
};

// keras.layers.Attention (score_mode "dot" or "concat") and keras.layers.AdditiveAttention on
// query (B..., Tq, D), value (B..., Tv, Dv), key (B..., Tv, D) (key defaults to value; masks on
// rank-3 inputs only):
//   dot:      scores = matmul(q, k^T) [* scale]
//   concat:   scores = concat_score_weight * sum(tanh([scale *] (q[:, :, None] + k[:, None])), -1)
//   additive: scores = sum(scale * tanh(q[:, :, None] + k[:, None]), -1), scale of shape (D,)
// then causal entries (use_causal_mask) and masked keys lowered by 1e9 (65504 in float16),
// softmax over Tv,
// dropout on the weights (training only), matmul(weights, v).
// Variables: scale [if use_scale] (shape () or (D,) for additive), concat_score_weight
// [concat], in Keras' order.
struct ScoreAttentionOptions {
  enum class Mode { kDot, kConcat, kAdditive };
  Mode mode = Mode::kDot;
  bool use_scale = false;
  double dropout = 0.0;
  int64_t dropout_seed = 0;
  bool trainable = true;
  Initializer scale_initializer;  // ones (dot, concat); GlorotUniform (additive)
};

class ScoreAttention : public Module {
 public:
  ScoreAttention(std::string name, ScoreAttentionOptions options);
  // `key` defaults to `value` (undefined Value). Builds on the first call. Keras masks (1 keep,
  // 0 masked; undefined for none): v_mask [B, Tv] lowers the masked keys' scores by 1e9,
  // q_mask [B, Tq] zeroes the masked queries' outputs.
  Value operator()(const Value& query, const Value& value, const Value& key, bool training,
                   bool use_causal_mask, const Value& q_mask = Value(),
                   const Value& v_mask = Value());
  const Variable& scale() const { return scale_; }
  const Variable& concat_score_weight() const { return concat_score_weight_; }

 private:
  Status Build(const TensorShape& query, const TensorShape& value, const TensorShape& key);

  ScoreAttentionOptions options_;
  std::unique_ptr<Dropout> dropout_;
  bool built_ = false;
  Variable scale_, concat_score_weight_;
};

}  // namespace troupe::nn
