#include "checkpoint/keras_layout.h"

#include <memory>

namespace troupe::ckpt {

KerasModelLayout::KerasModelLayout(const std::vector<KerasLayerWeights>& layers) {
  auto functional = std::make_shared<TrackableObject>();
  auto operations = std::make_shared<TrackableList>();
  for (const KerasLayerWeights& layer : layers) {
    auto l = std::make_shared<TrackableObject>();
    for (const auto& [name, weight] : layer.weights) l->Track(name, weight);
    operations->Append(l.get());
    owned_.push_back(std::move(l));
  }
  functional->Own("_operations", operations);
  Own("_functional", functional);
}

KerasOptimizerLayout::KerasOptimizerLayout(
    Trackable* iterations, Trackable* learning_rate,
    const std::vector<Trackable*>& trainable_variables,
    const std::vector<std::pair<std::string, std::vector<Trackable*>>>& slots) {
  auto variables = std::make_shared<TrackableList>();
  variables->Append(iterations);
  variables->Append(learning_rate);
  for (size_t i = 0; i < trainable_variables.size(); ++i) {
    for (const auto& [kind, per_var] : slots) {
      if (i < per_var.size()) variables->Append(per_var[i]);
    }
  }
  auto trainable = std::make_shared<TrackableList>();
  for (Trackable* v : trainable_variables) trainable->Append(v);
  Own("_variables", variables);
  Own("_trainable_variables", trainable);
  Track("_iterations", iterations);
  Track("_learning_rate", learning_rate);
  for (const auto& [kind, per_var] : slots) {
    auto list = std::make_shared<TrackableList>();
    for (Trackable* v : per_var) list->Append(v);
    Own(kind, list);
  }
}

}  // namespace troupe::ckpt
