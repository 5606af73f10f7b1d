// Keras BatchNormalization, LayerNormalization, GroupNormalization and UnitNormalization
// configs.
#include "graph/keras/factory_internal.h"
#include "graph/nn/normalization.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Status RequireNulls(ConfigReader& r, std::initializer_list<const char*> keys) {
  for (const char* k : keys) TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  return Status::OK();
}

// Reads gamma/beta initializers and regularizers (both layers share these keys).
struct ScaleShift {
  nn::Initializer gamma_init, beta_init;
  Regularizer gamma_reg, beta_reg;
};
Result<ScaleShift> ReadScaleShift(ConfigReader& r, int64_t seed) {
  ScaleShift s;
  TROUPE_ASSIGN_OR_RETURN(s.gamma_init, r.Init("gamma_initializer", "ones", seed));
  TROUPE_ASSIGN_OR_RETURN(s.beta_init, r.Init("beta_initializer", "zeros", seed + 1));
  TROUPE_ASSIGN_OR_RETURN(s.gamma_reg, r.Reg("gamma_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(s.beta_reg, r.Reg("beta_regularizer"));
  TROUPE_RETURN_IF_ERROR(RequireNulls(r, {"gamma_constraint", "beta_constraint"}));
  return s;
}

Result<LayerPtr> MakeBatchNormalization(ConfigReader& r, int64_t seed) {
  nn::BatchNormOptions o;
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axis, r.Ints("axis", 0, std::vector<int64_t>{-1}));
  if (axis.size() != 1) {
    return r.Unsupported("axis", nlohmann::json(axis).dump(), "a single axis");
  }
  o.axis = axis[0];
  TROUPE_ASSIGN_OR_RETURN(o.momentum, r.Double("momentum", 0.99));
  TROUPE_ASSIGN_OR_RETURN(o.epsilon, r.Double("epsilon", 1e-3));
  TROUPE_ASSIGN_OR_RETURN(o.center, r.Bool("center", true));
  TROUPE_ASSIGN_OR_RETURN(o.scale, r.Bool("scale", true));
  TROUPE_ASSIGN_OR_RETURN(o.synchronized, r.Bool("synchronized", false));
  TROUPE_ASSIGN_OR_RETURN(ScaleShift ss, ReadScaleShift(r, seed));
  o.gamma_initializer = ss.gamma_init;
  o.beta_initializer = ss.beta_init;
  TROUPE_ASSIGN_OR_RETURN(o.moving_mean_initializer,
                          r.Init("moving_mean_initializer", "zeros", seed + 2));
  TROUPE_ASSIGN_OR_RETURN(o.moving_variance_initializer,
                          r.Init("moving_variance_initializer", "ones", seed + 3));
  // Batch renormalization (Keras 3.14+ keys): only its default (off).
  TROUPE_RETURN_IF_ERROR(r.RequireEqual("renorm", false));
  TROUPE_RETURN_IF_ERROR(r.RequireNull("renorm_clipping"));
  TROUPE_ASSIGN_OR_RETURN(double renorm_momentum, r.Double("renorm_momentum", 0.99));
  (void)renorm_momentum;  // unused without renorm
  o.trainable = r.trainable();
  if (o.epsilon <= 0) return r.Invalid("epsilon", "must be positive");
  auto layer = std::make_unique<nn::BatchNormalization>(r.name(), o);
  nn::BatchNormalization* bn = layer.get();
  std::vector<WeightSpec> w;
  if (o.scale) w.push_back({"gamma", [bn] { return bn->gamma(); }, ss.gamma_reg});
  if (o.center) w.push_back({"beta", [bn] { return bn->beta(); }, ss.beta_reg});
  w.push_back({"moving_mean", [bn] { return bn->moving_mean(); }, {}});
  w.push_back({"moving_variance", [bn] { return bn->moving_variance(); }, {}});
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

Result<LayerPtr> MakeLayerNormalization(ConfigReader& r, int64_t seed) {
  nn::LayerNormOptions o;
  TROUPE_ASSIGN_OR_RETURN(o.axis, r.Ints("axis", 0, std::vector<int64_t>{-1}));
  TROUPE_ASSIGN_OR_RETURN(o.epsilon, r.Double("epsilon", 1e-3));
  TROUPE_ASSIGN_OR_RETURN(o.center, r.Bool("center", true));
  TROUPE_ASSIGN_OR_RETURN(o.scale, r.Bool("scale", true));
  TROUPE_ASSIGN_OR_RETURN(o.rms_scaling, r.Bool("rms_scaling", false));
  TROUPE_ASSIGN_OR_RETURN(ScaleShift ss, ReadScaleShift(r, seed));
  o.gamma_initializer = ss.gamma_init;
  o.beta_initializer = ss.beta_init;
  o.trainable = r.trainable();
  if (o.epsilon <= 0) return r.Invalid("epsilon", "must be positive");
  auto layer = std::make_unique<nn::LayerNormalization>(r.name(), o);
  nn::LayerNormalization* ln = layer.get();
  std::vector<WeightSpec> w;
  if (o.scale || o.rms_scaling) w.push_back({"gamma", [ln] { return ln->gamma(); }, ss.gamma_reg});
  if (o.center && !o.rms_scaling) {
    w.push_back({"beta", [ln] { return ln->beta(); }, ss.beta_reg});
  }
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

Result<LayerPtr> MakeGroupNormalization(ConfigReader& r, int64_t seed) {
  nn::GroupNormOptions o;
  TROUPE_ASSIGN_OR_RETURN(o.groups, r.Int("groups", 32));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axis, r.Ints("axis", 0, std::vector<int64_t>{-1}));
  if (axis.size() != 1) {
    return r.Unsupported("axis", nlohmann::json(axis).dump(), "a single axis");
  }
  o.axis = axis[0];
  TROUPE_ASSIGN_OR_RETURN(o.epsilon, r.Double("epsilon", 1e-3));
  TROUPE_ASSIGN_OR_RETURN(o.center, r.Bool("center", true));
  TROUPE_ASSIGN_OR_RETURN(o.scale, r.Bool("scale", true));
  TROUPE_ASSIGN_OR_RETURN(ScaleShift ss, ReadScaleShift(r, seed));
  o.gamma_initializer = ss.gamma_init;
  o.beta_initializer = ss.beta_init;
  o.trainable = r.trainable();
  if (o.groups <= 0 && o.groups != -1) {
    return r.Invalid("groups", "must be positive or -1, got " + std::to_string(o.groups));
  }
  if (o.epsilon <= 0) return r.Invalid("epsilon", "must be positive");
  auto layer = std::make_unique<nn::GroupNormalization>(r.name(), o);
  nn::GroupNormalization* gn = layer.get();
  std::vector<WeightSpec> w;
  if (o.scale) w.push_back({"gamma", [gn] { return gn->gamma(); }, ss.gamma_reg});
  if (o.center) w.push_back({"beta", [gn] { return gn->beta(); }, ss.beta_reg});
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

Result<LayerPtr> MakeUnitNormalization(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axis, r.Ints("axis", 0, std::vector<int64_t>{-1}));
  return LayerPtr(std::make_unique<UnaryLayer>(
      r, std::make_unique<nn::UnitNormalization>(r.name(), std::move(axis))));
}

Result<LayerPtr> MakeRMSNormalization(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axis, r.Ints("axis", 0, std::vector<int64_t>{-1}));
  TROUPE_ASSIGN_OR_RETURN(double epsilon, r.Double("epsilon", 1e-6));
  if (epsilon < 0) return r.Invalid("epsilon", "must not be negative");
  auto layer =
      std::make_unique<nn::RMSNormalization>(r.name(), std::move(axis), epsilon, r.trainable());
  nn::RMSNormalization* n = layer.get();
  std::vector<WeightSpec> w = {{"scale", [n] { return n->scale(); }, {}}};
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

}  // namespace

void AddNormalizationMakers(MakerTable* t) {
  (*t)["keras.layers.BatchNormalization"] = MakeBatchNormalization;
  (*t)["keras.layers.LayerNormalization"] = MakeLayerNormalization;
  (*t)["keras.layers.GroupNormalization"] = MakeGroupNormalization;
  (*t)["keras.layers.UnitNormalization"] = MakeUnitNormalization;
  (*t)["keras.layers.RMSNormalization"] = MakeRMSNormalization;
}

}  // namespace troupe::keras::internal
