// The layer classes keras.applications defines for its own models:
// keras.src.applications.inception_resnet_v2.CustomScaleLayer and
// keras.src.applications.convnext.LayerScale / StochasticDepth.
#include "graph/keras/factory_internal.h"
#include "graph/nn/preprocessing.h"
#include "graph/nn/regularization.h"
#include "graph/ops.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

// inputs[0] + inputs[1] * scale.
Result<LayerPtr> MakeCustomScale(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(double scale, r.Double("scale"));
  const std::string what = r.What();
  return LayerPtr(
      std::make_unique<FunctionLayer>(r, [scale, what](const std::vector<Value>& xs) -> Value {
        if (xs.size() != 2) {
          return Value::Error(
              InvalidArgumentError(what + " takes 2 inputs, got " + std::to_string(xs.size())));
        }
        return ops::Add(xs[0], ops::Mul(xs[1], ops::ScalarOf(scale, xs[1].dtype())));
      }));
}

Result<LayerPtr> MakeLayerScale(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(double init, r.Double("init_values"));
  TROUPE_ASSIGN_OR_RETURN(int64_t dim, r.Int("projection_dim"));
  if (dim <= 0) return r.Invalid("projection_dim", "must be positive");
  auto layer = std::make_unique<nn::LayerScale>(r.name(), init, dim, r.trainable());
  nn::LayerScale* l = layer.get();
  std::vector<WeightSpec> w = {{"gamma", [l] { return l->gamma(); }, Regularizer{}}};
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

Result<LayerPtr> MakeStochasticDepth(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(double rate, r.Double("drop_path_rate"));
  if (rate < 0 || rate >= 1) return r.Invalid("drop_path_rate", "must be in [0, 1)");
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::StochasticDepth>(r.name(), rate, seed)));
}

}  // namespace

void AddApplicationMakers(MakerTable* t) {
  (*t)["keras.src.applications.inception_resnet_v2.CustomScaleLayer"] = MakeCustomScale;
  (*t)["keras.src.applications.convnext.LayerScale"] = MakeLayerScale;
  (*t)["keras.src.applications.convnext.StochasticDepth"] = MakeStochasticDepth;
}

}  // namespace troupe::keras::internal
