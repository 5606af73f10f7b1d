// KerasModel's Keras layout (internal to graph/keras): the layers as Keras' checkpoint numbers
// them (with the op-layers a Sequential model's masks add), the summary rows, and the rule for
// masks that reach a layer.
#include <map>
#include <string>

#include "graph/keras/keras_order.h"
#include "graph/keras/model_json.h"
#include "graph/keras/model_plan.h"

namespace troupe::keras {

Status KerasModel::MaskRule(const Node& node, bool has_mask) const {
  const KerasLayer& layer = *node.layer;
  if (!has_mask || layer.ConsumesMask() || layer.PassesMaskUnchanged() ||
      !layer.SupportsMasking()) {
    return Status::OK();
  }
  return UnimplementedError("layer '" + layer.name() + "' (" + layer.class_name() +
                            ") receives a Keras mask (from Embedding(mask_zero=True) or "
                            "Masking) and Keras would apply it there; Troupe does not apply "
                            "masks in " +
                            layer.class_name() +
                            " yet: remove mask_zero/Masking, or put a layer that consumes the "
                            "mask (LSTM, GRU, SimpleRNN) before it");
}

Result<std::vector<nn::KerasLayer>> KerasModel::KerasLayers() const {
  if (!functional_ && !mask_uses_.empty()) return SequentialLayersWithMaskOps();
  std::vector<nn::KerasLayer> out;
  for (const auto& layer : layers_) {
    out.push_back(nn::KerasLayer{layer->name(), layer->KerasWeights()});
  }
  return out;
}

Result<std::vector<nn::KerasLayer>> KerasModel::SequentialLayersWithMaskOps() const {
  // The graph Keras builds for the Sequential model: each layer on the one before it, a mask
  // maker's op-layers chained on its input, each consumer reading the chain's end as its mask;
  // Keras' order of that graph (keras_order.h) numbers the checkpoint's operations.
  std::vector<LayerCall> calls;
  std::map<std::string, const KerasLayer*> by_name;
  auto op_name = [](const KerasLayer* maker, int k) {
    return maker->name() + "/(mask op " + std::to_string(k) + ")";
  };
  std::string previous = input_name_;
  for (const auto& layer : layers_) {
    LayerCall call{layer->name(), 0, {TensorRef{previous, 0, 0}}};
    for (const auto& [consumer, maker] : mask_uses_) {
      if (consumer == layer.get()) {
        call.inputs.push_back(TensorRef{op_name(maker, maker->MaskOpCount() - 1), 0, 0});
      }
    }
    bool makes_used_mask = false;
    for (const auto& use : mask_uses_)
      makes_used_mask = makes_used_mask || use.second == layer.get();
    if (makes_used_mask) {
      std::string on = previous;
      for (int k = 0; k < layer->MaskOpCount(); ++k) {
        calls.push_back(LayerCall{op_name(layer.get(), k), 0, {TensorRef{on, 0, 0}}});
        on = op_name(layer.get(), k);
      }
    }
    calls.push_back(std::move(call));
    by_name[layer->name()] = layer.get();
    previous = layer->name();
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<std::string> order,
                          KerasLayerOrder(input_name_, calls, TensorRef{previous, 0, 0}));
  std::vector<nn::KerasLayer> out;
  for (size_t i = 1; i < order.size(); ++i) {  // order[0] is the InputLayer
    auto it = by_name.find(order[i]);
    if (it == by_name.end()) {
      out.push_back(nn::KerasLayer{order[i], {}});  // a mask op-layer: no weights
    } else {
      out.push_back(nn::KerasLayer{it->second->name(), it->second->KerasWeights()});
    }
  }
  return out;
}

std::vector<LayerSummary> KerasModel::Summary() const {
  std::map<const KerasLayer*, LayerSummary> rows;
  for (size_t i = 0; i < plan_->nodes.size() && i < built_shapes_.size(); ++i) {
    const Node& node = plan_->nodes[i];
    LayerSummary& row = rows[node.layer];
    row.output_shapes.push_back(ShapeWithBatch(built_shapes_[i]));
    for (const TensorRef& in : node.tensors()) row.inbound.push_back(in.layer);
  }
  std::vector<LayerSummary> out;
  out.push_back(
      LayerSummary{input_name_, "InputLayer", {ShapeWithBatch(input_shape_, true)}, 0, 0, {}});
  for (const auto& layer : layers_) {
    LayerSummary row = rows[layer.get()];
    row.name = layer->name();
    row.class_name = layer->class_name();
    for (const auto& [attr, v] : layer->KerasWeights()) {
      row.params += v.shape().num_elements();
      if (v.trainable()) row.trainable_params += v.shape().num_elements();
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace troupe::keras
