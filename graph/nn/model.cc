#include "graph/nn/model.h"

namespace troupe::nn {

Result<std::vector<KerasLayer>> Model::KerasLayers() const {
  std::vector<KerasLayer> layers;
  for (const auto& [name, child] : Children()) {
    KerasLayer layer{name, {}};
    std::vector<std::pair<std::string, Variable>> vars = child->NamedVariables();
    if (vars.size() > 2) {
      return UnimplementedError("layer '" + name + "' has " + std::to_string(vars.size()) +
                                " variables; the default Keras layout maps only a kernel and a "
                                "bias (override Model::KerasLayers for other layers)");
    }
    for (size_t i = 0; i < vars.size(); ++i) {
      layer.weights.emplace_back(i == 0 ? "_kernel" : "bias", vars[i].second);
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

Value Model::Loss(const Value& labels, const Value& outputs) {
  return CompiledLoss(loss_spec_, labels, outputs);
}

}  // namespace troupe::nn
