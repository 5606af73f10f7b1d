#include "checkpoint/keras_layout.h"

#include <map>
#include <memory>
#include <string>

namespace troupe::ckpt {

namespace {

// Tracks `weight` under `path` ("a/b/c": objects a and b, then the weight c), creating the
// intermediate objects once.
void TrackPath(TrackableObject* layer, std::map<std::string, TrackableObject*>* objects,
               std::vector<std::shared_ptr<TrackableObject>>* owned, const std::string& path,
               Trackable* weight) {
  TrackableObject* parent = layer;
  std::string prefix;
  size_t start = 0;
  for (size_t slash = path.find('/'); slash != std::string::npos;
       start = slash + 1, slash = path.find('/', start)) {
    const std::string part = path.substr(start, slash - start);
    prefix += part + "/";
    auto it = objects->find(prefix);
    if (it == objects->end()) {
      auto child = std::make_shared<TrackableObject>();
      parent->Track(part, child.get());
      it = objects->emplace(prefix, child.get()).first;
      owned->push_back(std::move(child));
    }
    parent = it->second;
  }
  parent->Track(path.substr(start), weight);
}

}  // namespace

KerasModelLayout::KerasModelLayout(const std::vector<KerasLayerWeights>& layers, bool functional) {
  auto operations = std::make_shared<TrackableList>();
  for (const KerasLayerWeights& layer : layers) {
    auto l = std::make_shared<TrackableObject>();
    std::map<std::string, TrackableObject*> sublayers;
    std::vector<std::shared_ptr<TrackableObject>> owned;
    for (const auto& [path, weight] : layer.weights) {
      TrackPath(l.get(), &sublayers, &owned, path, weight);
    }
    operations->Append(l.get());
    owned_.push_back(std::move(l));
    for (auto& o : owned) owned_.push_back(std::move(o));
  }
  if (functional) {
    Own("_operations", operations);
  } else {
    auto root = std::make_shared<TrackableObject>();
    root->Own("_operations", operations);
    Own("_functional", root);
  }
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

KerasOptimizerLayout::KerasOptimizerLayout(
    Trackable* iterations, Trackable* learning_rate,
    const std::vector<Trackable*>& trainable_variables, const std::vector<Trackable*>& variables,
    const std::vector<std::pair<std::string, std::vector<Trackable*>>>& lists) {
  auto all = std::make_shared<TrackableList>();
  for (Trackable* v : variables) all->Append(v);
  auto trainable = std::make_shared<TrackableList>();
  for (Trackable* v : trainable_variables) trainable->Append(v);
  Own("_variables", all);
  Own("_trainable_variables", trainable);
  Track("_iterations", iterations);
  if (learning_rate != nullptr) Track("_learning_rate", learning_rate);
  for (const auto& [name, per_var] : lists) {
    auto list = std::make_shared<TrackableList>();
    for (Trackable* v : per_var) list->Append(v);
    Own(name, list);
  }
}

}  // namespace troupe::ckpt
