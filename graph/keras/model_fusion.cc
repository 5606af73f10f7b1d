// KerasModel::FuseLayerPairs and the layer-config tests it needs (see model_plan.h).
#include <map>
#include <string>

#include "graph/keras/json_util.h"
#include "graph/keras/model_json.h"
#include "graph/keras/model_plan.h"

namespace troupe::keras {

using nlohmann::json;

bool IsReluActivation(const json& envelope) {
  if (envelope.value("class_name", "") != "Activation") return false;
  const json* config = Find(envelope, "config");
  if (config == nullptr || !config->is_object() || !config->contains("activation")) return false;
  const json& a = (*config)["activation"];
  return a.is_string() && a.get<std::string>() == "relu";
}

bool IsLinear(const json& envelope) {
  const json* config = Find(envelope, "config");
  if (config == nullptr || !config->is_object() || !config->contains("activation")) return true;
  const json& a = (*config)["activation"];
  return a.is_null() || (a.is_string() && a.get<std::string>() == "linear");
}

// Hands work to the layer that alone reads a single-call layer's output (and no other node nor
// the model output reads it): a linear Conv2D's bias add to a BatchNormalization after it
// (FuseBiasOf), and an Activation("relu") node to the BatchNormalization or Add before it
// (FuseRelu; the node then passes its input on). Same math, and the same ops when unfused; the
// CPU graph then uses FusedBiasBatchNorm[Relu]Training / AddRelu, without the intermediate
// tensors of the separate ops; and a BatchNormalization before such an Add + ReLU to the Add
// (FuseNormOf: Fused[Bias]BatchNormAddReluTraining).
void KerasModel::FuseLayerPairs() {
  std::map<TensorRef, int> readers = {{plan_->output, 1}};
  std::map<std::string, int> calls;
  std::map<std::string, Node*> producer;
  for (Node& n : plan_->nodes) {
    for (const TensorRef& in : n.tensors()) ++readers[in];
    ++calls[n.layer->name()];
    producer[n.layer->name()] = &n;
  }
  // The producer of n's input i when n is the only reader of that single-call layer's output,
  // in the same dtype policy.
  auto sole_producer_of = [&](const Node& n, size_t i) -> Node* {
    const TensorRef& in = n.inputs[i];
    if (in.tensor != 0 || readers[in] != 1 || calls[in.layer] != 1) return nullptr;
    auto p = producer.find(in.layer);
    if (p == producer.end() || p->second->layer->dtype_policy() != n.layer->dtype_policy()) {
      return nullptr;
    }
    return p->second;
  };
  auto sole_producer = [&](const Node& n) -> Node* {
    return n.inputs.size() == 1 ? sole_producer_of(n, 0) : nullptr;
  };
  for (Node& n : plan_->nodes) {
    Node* p = calls[n.layer->name()] == 1 ? sole_producer(n) : nullptr;
    if (p != nullptr && p->linear) n.layer->FuseBiasOf(p->layer);
  }
  for (Node& n : plan_->nodes) {
    Node* p = n.relu ? sole_producer(n) : nullptr;
    if (p != nullptr) n.fused_to = p->layer->FuseRelu();
  }
  // Then a BatchNormalization that alone feeds one input of such an Add + ReLU (the end of a
  // residual block): the Add's layer runs it, fused with the add and the ReLU.
  for (Node& n : plan_->nodes) {
    if (n.inputs.size() != 2 || calls[n.layer->name()] != 1) continue;
    for (size_t i : {size_t{1}, size_t{0}}) {
      Node* p = sole_producer_of(n, i);
      if (p != nullptr && !p->fused_to && !p->run_by_reader && p->inputs.size() == 1 &&
          n.layer->FuseNormOf(p->layer, i)) {
        p->run_by_reader = true;
        break;
      }
    }
  }
}

}  // namespace troupe::keras
