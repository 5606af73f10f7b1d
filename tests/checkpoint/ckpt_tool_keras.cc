// ckpt_tool keras-write / keras-read: an object graph laid out like Keras 3, from a manifest of
// role keys.
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/keras_layout.h"
#include "checkpoint/object_checkpoint.h"
#include "core/dtype.h"
#include "core/env.h"
#include "tests/checkpoint/ckpt_tool.h"

namespace troupe::ckpt::tool {

namespace {

// Keras-shaped objects built from role-keyed manifest entries.
struct KerasObjects {
  std::map<std::string, std::unique_ptr<VariableTrackable>> vars;  // by role key
  std::unique_ptr<KerasModelLayout> model;
  std::unique_ptr<KerasOptimizerLayout> optimizer;
  std::unique_ptr<GeneratorLayout> gen;
  Checkpoint root;
};

Result<std::unique_ptr<KerasObjects>> BuildKeras(const std::vector<ManifestLine>& lines,
                                                 bool load_values) {
  auto k = std::make_unique<KerasObjects>();
  std::map<int, std::vector<std::pair<std::string, Trackable*>>> layers;
  std::map<std::string, std::map<int, Trackable*>> slot_lists;
  std::vector<std::string> slot_order;
  for (const auto& m : lines) {
    TROUPE_ASSIGN_OR_RETURN(Tensor value, InitialValue(m, load_values));
    auto var = std::make_unique<VariableTrackable>(m.key, value);
    Trackable* raw = var.get();
    k->vars[m.key] = std::move(var);
    auto parts = Split(m.key, '/');
    if (parts[0] == "model" && parts.size() == 3) {
      layers[std::stoi(parts[1])].emplace_back(parts[2], raw);
    } else if (parts[0] == "optimizer" && parts.size() == 3) {
      if (slot_lists.count(parts[1]) == 0) slot_order.push_back(parts[1]);
      slot_lists[parts[1]][std::stoi(parts[2])] = raw;
    }
  }
  std::vector<KerasLayerWeights> model_layers;
  std::vector<Trackable*> trainable;
  int max_layer = layers.empty() ? -1 : layers.rbegin()->first;
  for (int i = 0; i <= max_layer; ++i) {
    KerasLayerWeights w;
    if (layers.count(i)) w.weights = layers[i];
    for (auto& [name, v] : w.weights) trainable.push_back(v);
    model_layers.push_back(std::move(w));
  }
  k->model = std::make_unique<KerasModelLayout>(model_layers);
  k->root.Track("model", k->model.get());
  if (k->vars.count("optimizer/iterations")) {
    std::vector<std::pair<std::string, std::vector<Trackable*>>> slots;
    for (const auto& name : slot_order) {
      std::vector<Trackable*> per_var;
      for (auto& [i, v] : slot_lists[name]) per_var.push_back(v);
      slots.emplace_back(name, per_var);
    }
    k->optimizer = std::make_unique<KerasOptimizerLayout>(k->vars["optimizer/iterations"].get(),
                                                          k->vars["optimizer/learning_rate"].get(),
                                                          trainable, slots);
    k->root.Track("optimizer", k->optimizer.get());
  }
  if (k->vars.count("gen/state")) {
    k->gen = std::make_unique<GeneratorLayout>(k->vars["gen/state"].get());
    k->root.Track("gen", k->gen.get());
  }
  if (k->vars.count("save_counter")) {
    k->root.save_counter().set_value(k->vars["save_counter"]->value());
  }
  return k;
}

}  // namespace

int KerasWrite(int argc, char** argv) {
  return WriteObjects(argc, argv, "keras-write PREFIX MANIFEST", BuildKeras);
}

int KerasRead(int argc, char** argv) {
  if (argc < 5) return Fail(InvalidArgumentError("keras-read PREFIX MANIFEST OUTDIR"));
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto k = BuildKeras(*lines, false);
  if (!k.ok()) return Fail(k.status());
  auto status = (*k)->root.Restore(argv[2]);
  if (!status.ok()) return Fail(status.status());
  if (Status s = status->AssertExistingObjectsMatched(); !s.ok()) return Fail(s);
  std::vector<std::string> keys;
  for (const auto& m : *lines) keys.push_back(m.key);
  Status s = WriteTensorDir(argv[4], "r", keys, [&](const std::string& key) -> Result<Tensor> {
    return key == "save_counter" ? (*k)->root.save_counter().value() : (*k)->vars[key]->value();
  });
  if (!s.ok()) return Fail(s);
  std::cout << "restored " << status->restored_tensors() << " tensors\n";
  return 0;
}

}  // namespace troupe::ckpt::tool
