// Keras Embedding and MultiHeadAttention configs.
#include "graph/keras/factory_internal.h"
#include "graph/nn/attention.h"
#include "graph/nn/embedding.h"
#include "graph/ops.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

// Embedding(mask_zero=True): the ids that are not 0 are the mask of the output.
class MaskZeroEmbedding : public UnaryLayer {
 public:
  using UnaryLayer::UnaryLayer;
  Value ComputeMask(const std::vector<Value>& inputs, const CallOptions&) const override {
    const Value& ids = inputs[0];
    return ops::Cast(ops::NotEqual(ids, ops::Cast(ops::Scalar(0), ids.dtype())), DType::kFloat32);
  }
  int MaskOpCount() const override { return 1; }
};

Result<LayerPtr> MakeEmbedding(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(int64_t input_dim, r.Int("input_dim"));
  TROUPE_ASSIGN_OR_RETURN(int64_t output_dim, r.Int("output_dim"));
  nn::EmbeddingOptions o;
  o.trainable = r.trainable();
  TROUPE_ASSIGN_OR_RETURN(o.embeddings_initializer,
                          r.Init("embeddings_initializer", "uniform", seed));
  TROUPE_ASSIGN_OR_RETURN(Regularizer reg, r.Reg("embeddings_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(bool mask_zero, r.Bool("mask_zero", false));
  for (const char* k : {"embeddings_constraint", "activity_regularizer", "quantization_config",
                        "lora_rank", "lora_alpha", "input_length"}) {
    TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  }
  if (input_dim <= 0) return r.Invalid("input_dim", "must be positive");
  if (output_dim <= 0) return r.Invalid("output_dim", "must be positive");
  auto layer = std::make_unique<nn::Embedding>(r.name(), input_dim, output_dim, o);
  nn::Embedding* e = layer.get();
  std::vector<WeightSpec> w = {{"_embeddings", [e] { return e->embeddings(); }, reg}};
  if (mask_zero) {
    return LayerPtr(std::make_unique<MaskZeroEmbedding>(r, std::move(layer), std::move(w)));
  }
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

// troupe>PositionEmbedding (Troupe's registered Keras layer, tests/interop/troupe_keras.py).
Result<LayerPtr> MakePositionEmbedding(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(int64_t length, r.Int("sequence_length"));
  nn::EmbeddingOptions o;
  o.trainable = r.trainable();
  TROUPE_ASSIGN_OR_RETURN(o.embeddings_initializer,
                          r.Init("embeddings_initializer", "uniform", seed));
  if (length <= 0) return r.Invalid("sequence_length", "must be positive");
  auto layer = std::make_unique<nn::PositionEmbedding>(r.name(), length, o);
  nn::PositionEmbedding* p = layer.get();
  std::vector<WeightSpec> w = {{"embeddings", [p] { return p->embeddings(); }, {}}};
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

// Apply(query, value[, key]).
class AttentionLayer : public KerasLayer {
 public:
  AttentionLayer(const ConfigReader& r, nn::MultiHeadAttentionOptions o, Regularizer kernel_reg,
                 Regularizer bias_reg)
      : KerasLayer(r.name(), r.class_name()), mha_(r.name(), std::move(o)) {
    const std::pair<const char*, const nn::MultiHeadAttention::Projection*> parts[] = {
        {"_query_dense", &mha_.query()},
        {"_key_dense", &mha_.key()},
        {"_value_dense", &mha_.value()},
        {"_output_dense", &mha_.output()}};
    for (const auto& [attr, p] : parts) {
      weights_.push_back({std::string(attr) + "/_kernel", [p] { return p->kernel; }, kernel_reg});
      weights_.push_back({std::string(attr) + "/bias", [p] { return p->bias; }, bias_reg});
    }
  }
  nn::Module* module() override { return &mha_; }
  Value Apply(const std::vector<Value>& in, const CallOptions& options) override {
    if (in.size() != 2 && in.size() != 3) {
      return Value::Error(InvalidArgumentError("Keras layer MultiHeadAttention '" + name() +
                                               "' takes (query, value[, key]), got " +
                                               std::to_string(in.size()) + " inputs"));
    }
    // Keras masks of query, value, key; without a key, the key is the value (and its mask).
    std::vector<Value> masks = options.masks;
    if (!masks.empty()) {
      masks.resize(3);
      if (in.size() == 2) masks[2] = masks[1];
    }
    return mha_(in[0], in[1], in.size() == 3 ? in[2] : Value(), options.training,
                options.use_causal_mask, masks);
  }
  bool ConsumesMask() const override { return true; }
  // Keras sets the query's mask on the output.
  Value ComputeMask(const std::vector<Value>&, const CallOptions& options) const override {
    return options.masks.empty() ? Value() : options.masks[0];
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    return WeightsOf(weights_);
  }
  std::vector<WeightPenalty> Penalties() const override { return PenaltiesOf(weights_); }

 private:
  nn::MultiHeadAttention mha_;
  std::vector<WeightSpec> weights_;
};

Result<LayerPtr> MakeMultiHeadAttention(ConfigReader& r, int64_t seed) {
  nn::MultiHeadAttentionOptions o;
  TROUPE_ASSIGN_OR_RETURN(o.num_heads, r.Int("num_heads"));
  TROUPE_ASSIGN_OR_RETURN(o.key_dim, r.Int("key_dim"));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> value_dim, r.OptionalInt("value_dim"));
  o.value_dim = value_dim ? *value_dim : o.key_dim;
  TROUPE_ASSIGN_OR_RETURN(o.dropout, r.Double("dropout", 0.0));
  TROUPE_ASSIGN_OR_RETURN(o.use_bias, r.Bool("use_bias", true));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> out,
                          r.Ints("output_shape", 0, std::vector<int64_t>{}));
  if (out.size() > 1) {
    return r.Unsupported("output_shape", nlohmann::json(out).dump(),
                         "null, an int or a 1-element list");
  }
  o.output_dim = out.empty() ? 0 : out[0];
  // null: every axis between the batch and the features; checked against the inputs' rank
  // when the layer is built.
  TROUPE_ASSIGN_OR_RETURN(o.attention_axes, r.Ints("attention_axes", 0, std::vector<int64_t>{}));
  TROUPE_RETURN_IF_ERROR(r.RequireEqual("use_gate", false));
  TROUPE_RETURN_IF_ERROR(r.RequireNull("sliding_window"));
  TROUPE_ASSIGN_OR_RETURN(o.dropout_seed, r.OptionalInt("seed"));
  if (!o.dropout_seed) o.dropout_seed = seed + 8;
  // Keras clones the initializers per projection: query, key, value, attention_output.
  for (int64_t i = 0; i < 4; ++i) {
    TROUPE_ASSIGN_OR_RETURN(nn::Initializer k,
                            r.Init("kernel_initializer", "glorot_uniform", seed + i));
    TROUPE_ASSIGN_OR_RETURN(nn::Initializer b, r.Init("bias_initializer", "zeros", seed + 4 + i));
    o.kernel_initializers.push_back(k);
    o.bias_initializers.push_back(b);
  }
  TROUPE_ASSIGN_OR_RETURN(Regularizer kernel_reg, r.Reg("kernel_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(Regularizer bias_reg, r.Reg("bias_regularizer"));
  for (const char* k : {"kernel_constraint", "bias_constraint", "activity_regularizer"}) {
    TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  }
  if (o.num_heads <= 0) return r.Invalid("num_heads", "must be positive");
  if (o.key_dim <= 0) return r.Invalid("key_dim", "must be positive");
  if (o.dropout < 0 || o.dropout >= 1) return r.Invalid("dropout", "must be in [0, 1)");
  o.trainable = r.trainable();
  return LayerPtr(std::make_unique<AttentionLayer>(r, std::move(o), kernel_reg, bias_reg));
}

}  // namespace

void AddSequenceMakers(MakerTable* t) {
  (*t)["keras.layers.Embedding"] = MakeEmbedding;
  (*t)["keras.layers.MultiHeadAttention"] = MakeMultiHeadAttention;
  // Troupe's registered classes: found by registered_name "troupe>Name" whatever the Python
  // module Keras recorded (layer_factory.cc).
  (*t)["troupe.layers.PositionEmbedding"] = MakePositionEmbedding;
}

}  // namespace troupe::keras::internal
