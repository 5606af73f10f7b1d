// Keras Attention and AdditiveAttention configs (MultiHeadAttention is in layers_sequence.cc).
#include "graph/keras/factory_internal.h"
#include "graph/nn/attention.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

// Apply(query, value[, key]), Keras' layer([query, value, key]).
class ScoreAttentionLayer : public KerasLayer {
 public:
  ScoreAttentionLayer(const ConfigReader& r, nn::ScoreAttentionOptions o)
      : KerasLayer(r.name(), r.class_name()), attention_(r.name(), std::move(o)) {}
  nn::Module* module() override { return &attention_; }
  Value Apply(const std::vector<Value>& in, const CallOptions& options) override {
    if (in.size() != 2 && in.size() != 3) {
      return Value::Error(InvalidArgumentError("Keras layer " + class_name() + " '" + name() +
                                               "' takes [query, value(, key)], got " +
                                               std::to_string(in.size()) + " inputs"));
    }
    // Keras' mask = [query mask, value mask(, key mask: unused)].
    const Value q_mask = options.masks.size() > 0 ? options.masks[0] : Value();
    const Value v_mask = options.masks.size() > 1 ? options.masks[1] : Value();
    return attention_(in[0], in[1], in.size() == 3 ? in[2] : Value(), options.training,
                      options.use_causal_mask, q_mask, v_mask);
  }
  bool ConsumesMask() const override { return true; }
  // Keras' compute_mask: the query's mask.
  Value ComputeMask(const std::vector<Value>&, const CallOptions& options) const override {
    return options.masks.empty() ? Value() : options.masks[0];
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    std::vector<std::pair<std::string, Variable>> out;
    if (attention_.scale().valid()) out.emplace_back("scale", attention_.scale());
    if (attention_.concat_score_weight().valid()) {
      out.emplace_back("concat_score_weight", attention_.concat_score_weight());
    }
    return out;
  }

 private:
  nn::ScoreAttention attention_;
};

// Keys both classes share: use_scale, dropout, seed.
Status ReadCommon(ConfigReader& r, int64_t seed, bool default_use_scale,
                  nn::ScoreAttentionOptions* o) {
  TROUPE_ASSIGN_OR_RETURN(o->use_scale, r.Bool("use_scale", default_use_scale));
  TROUPE_ASSIGN_OR_RETURN(o->dropout, r.Double("dropout", 0.0));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  o->dropout_seed = s ? *s : seed + 1;
  if (o->dropout < 0 || o->dropout >= 1) return r.Invalid("dropout", "must be in [0, 1)");
  o->trainable = r.trainable();
  return Status::OK();
}

Result<LayerPtr> MakeAttention(ConfigReader& r, int64_t seed) {
  nn::ScoreAttentionOptions o;
  TROUPE_RETURN_IF_ERROR(ReadCommon(r, seed, false, &o));
  TROUPE_ASSIGN_OR_RETURN(std::string mode, r.String("score_mode", "dot"));
  if (mode == "dot") {
    o.mode = nn::ScoreAttentionOptions::Mode::kDot;
  } else if (mode == "concat") {
    o.mode = nn::ScoreAttentionOptions::Mode::kConcat;
  } else {
    return r.Unsupported("score_mode", "\"" + mode + "\"", "\"dot\", \"concat\"");
  }
  return LayerPtr(std::make_unique<ScoreAttentionLayer>(r, std::move(o)));
}

Result<LayerPtr> MakeAdditiveAttention(ConfigReader& r, int64_t seed) {
  nn::ScoreAttentionOptions o;
  o.mode = nn::ScoreAttentionOptions::Mode::kAdditive;
  TROUPE_RETURN_IF_ERROR(ReadCommon(r, seed, true, &o));
  // Keras' scale initializer is the string "glorot_uniform" (an unseeded draw).
  o.scale_initializer = nn::GlorotUniform(seed);
  return LayerPtr(std::make_unique<ScoreAttentionLayer>(r, std::move(o)));
}

}  // namespace

void AddAttentionMakers(MakerTable* t) {
  (*t)["keras.layers.Attention"] = MakeAttention;
  (*t)["keras.layers.AdditiveAttention"] = MakeAdditiveAttention;
}

}  // namespace troupe::keras::internal
