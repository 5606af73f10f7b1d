// Keras activation layers with weights: PReLU. (Activation, ReLU, LeakyReLU, ELU and Softmax
// are in layers_core.cc.)
#include "graph/keras/factory_internal.h"
#include "graph/nn/activations.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Result<LayerPtr> MakePReLU(ConfigReader& r, int64_t seed) {
  nn::PReluOptions o;
  TROUPE_ASSIGN_OR_RETURN(o.alpha_initializer, r.Init("alpha_initializer", "zeros", seed));
  TROUPE_ASSIGN_OR_RETURN(Regularizer reg, r.Reg("alpha_regularizer"));
  TROUPE_RETURN_IF_ERROR(r.RequireNull("alpha_constraint"));
  TROUPE_ASSIGN_OR_RETURN(o.shared_axes, r.Ints("shared_axes", 0, std::vector<int64_t>{}));
  for (int64_t a : o.shared_axes) {
    // Keras sizes alpha with param_shape[axis - 1]: only positive input axes mean an axis.
    if (a < 1) {
      return r.Unsupported("shared_axes", nlohmann::json(o.shared_axes).dump(),
                           "positive input axes (1 is the first axis after the batch)");
    }
  }
  o.trainable = r.trainable();
  auto layer = std::make_unique<nn::PReLU>(r.name(), o);
  nn::PReLU* p = layer.get();
  std::vector<WeightSpec> w = {{"alpha", [p] { return p->alpha(); }, reg}};
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

}  // namespace

void AddActivationMakers(MakerTable* t) { (*t)["keras.layers.PReLU"] = MakePReLU; }

}  // namespace troupe::keras::internal
