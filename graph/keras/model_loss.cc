#include "graph/keras/model_loss.h"

#include <string_view>

#include "graph/keras/json_util.h"

namespace troupe::keras {
namespace {

using nlohmann::json;

// The config of the layer whose output is the model's output; nullptr when the JSON does not
// say (a malformed model, which the loader reports).
const json* OutputLayerConfig(const json& model) {
  const json* config = Find(model, "config");
  const json* layers = config != nullptr ? Find(*config, "layers") : nullptr;
  if (layers == nullptr || !layers->is_array() || layers->empty()) return nullptr;
  if (model.value("class_name", "") == "Sequential") return Find(layers->back(), "config");
  std::vector<TensorRef> outputs;
  const json* refs = Find(*config, "output_layers");
  if (refs == nullptr || !CollectRefs(*refs, "output_layers", &outputs).ok() ||
      outputs.size() != 1) {
    return nullptr;
  }
  for (const json& layer : *layers) {
    const json* layer_config = Find(layer, "config");
    if (layer_config != nullptr && layer_config->value("name", "") == outputs[0].layer) {
      return layer_config;
    }
  }
  return nullptr;
}

}  // namespace

std::string OutputLayerActivation(const json& model) {
  const json* config = Find(model, "config");
  const json* layers = config != nullptr ? Find(*config, "layers") : nullptr;
  const json* out = OutputLayerConfig(model);
  if (out == nullptr || layers == nullptr) return "";
  // The Softmax layer has no "activation" key; find its class through the envelope.
  for (const json& layer : *layers) {
    if (Find(layer, "config") == out && layer.value("class_name", "") == "Softmax") {
      return "softmax";
    }
  }
  const json* activation = Find(*out, "activation");
  if (activation == nullptr || !activation->is_string()) return "";
  const std::string name = activation->get<std::string>();
  return name == "softmax" || name == "sigmoid" ? name : "";
}

Result<std::optional<nn::LossSpec>> CompiledLossOf(const json& model) {
  const json* compile = Find(model, "compile_config");
  const json* loss = compile != nullptr ? Find(*compile, "loss") : nullptr;
  if (loss == nullptr || loss->is_null()) return std::optional<nn::LossSpec>();
  nn::LossSpec spec;
  std::string name;
  if (loss->is_string()) {
    name = loss->get<std::string>();
    spec.from_logits = false;  // Keras' default for a loss named by string
  } else if (loss->is_object() && loss->contains("class_name")) {
    name = loss->value("class_name", "");
    const json* config = Find(*loss, "config");
    const json* from_logits = config != nullptr ? Find(*config, "from_logits") : nullptr;
    spec.from_logits =
        from_logits != nullptr && from_logits->is_boolean() && from_logits->get<bool>();
  } else {
    return UnimplementedError("the model was compiled with a loss Troupe cannot read (" +
                              loss->dump() + "); set model.loss");
  }
  Result<nn::LossKind> kind = nn::LossKindFromName(name);
  if (!kind.ok()) {
    return UnimplementedError(
        "the model was compiled with loss '" + name +
        "', which Troupe lacks; set model.loss to one it has: " + kind.status().message());
  }
  spec.kind = *kind;
  return std::optional<nn::LossSpec>(spec);
}

}  // namespace troupe::keras
