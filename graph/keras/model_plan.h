// Internal to graph/keras: the layer-call plan a KerasModel runs (model_json.cc builds it,
// model_fusion.cc hands work between neighbouring layers in it).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "graph/keras/json_util.h"
#include "graph/keras/model_json.h"

namespace troupe::keras {

// One layer call: which layer, on which tensors, with which keyword options.
struct KerasModel::Node {
  KerasLayer* layer = nullptr;
  int64_t index = 0;  // this node's index among the layer's calls
  // A constant argument (the 3.0 of the op-layer `x + 3.0`) holds an empty TensorRef here and
  // its value in `constants`, keyed by its position.
  std::vector<TensorRef> inputs;
  std::map<size_t, double> constants;
  // The call's `mask` argument, one per input from the first (an empty TensorRef for none).
  std::vector<TensorRef> mask_inputs;
  CallOptions options;
  // The tensors the call reads: its inputs (constants left out), then its masks.
  std::vector<TensorRef> tensors() const {
    std::vector<TensorRef> out;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!constants.count(i)) out.push_back(inputs[i]);
    }
    for (const TensorRef& m : mask_inputs) {
      if (!m.layer.empty()) out.push_back(m);
    }
    return out;
  }
  bool relu = false;           // an Activation("relu") call
  bool linear = false;         // a layer with "activation": "linear" or none
  bool fused_to = false;       // its producer applies the ReLU (FuseLayerPairs): an alias
  bool run_by_reader = false;  // its reader calls the layer (FuseLayerPairs): an alias
};

// The layer calls in an order where every input exists before it is used.
struct KerasModel::Plan {
  std::vector<Node> nodes;
  TensorRef output;
};

// keras.layers.Activation("relu") (the activation as a name or a serialized function).
bool IsReluActivation(const nlohmann::json& envelope);
// A layer config without an activation of its own ("linear", null or no key).
bool IsLinear(const nlohmann::json& envelope);

}  // namespace troupe::keras
