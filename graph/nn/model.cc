#include "graph/nn/model.h"

#include "graph/nn/losses.h"
#include "graph/ops.h"

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
  if (outputs.ok() && outputs.shape().rank() > 2) {
    // A prediction per position (a language model's [batch, time, vocab]): the mean over
    // every position, as Keras' loss averages over all but the class axis.
    const int64_t classes = outputs.shape().dim(outputs.shape().rank() - 1);
    return SparseCategoricalCrossentropy(ops::Reshape(labels, {-1}),
                                         ops::Reshape(outputs, {-1, classes}), true);
  }
  return SparseCategoricalCrossentropy(labels, outputs, /*from_logits=*/true);
}

}  // namespace troupe::nn
