// keras.layers.MultiHeadAttention (TF backend) on (B, T, D) inputs, attention over axis 1.
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
  // `key` defaults to `value` (undefined Value). Builds on the first call.
  Value operator()(const Value& query, const Value& value, const Value& key, bool training,
                   bool use_causal_mask);
  Status Build(const TensorShape& query, const TensorShape& value, const TensorShape& key);

  const Projection& query() const { return query_; }
  const Projection& key() const { return key_; }
  const Projection& value() const { return value_; }
  const Projection& output() const { return output_; }

 private:
  Value Attend(const Value& q, const Value& k, const Value& v, bool training, bool causal);

  MultiHeadAttentionOptions options_;
  Projection query_{"query"}, key_{"key"}, value_{"value"}, output_{"attention_output"};
  std::unique_ptr<Dropout> dropout_;
  bool built_ = false;
  int64_t output_dim_ = 0;
};

}  // namespace troupe::nn
