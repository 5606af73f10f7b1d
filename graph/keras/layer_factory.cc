#include "graph/keras/layer_factory.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "graph/keras/factory_internal.h"
#include "graph/nn/layers.h"
#include "graph/nn/normalization.h"

namespace troupe::keras {
namespace internal {

UnaryLayer::UnaryLayer(const ConfigReader& r, std::unique_ptr<nn::Layer> layer,
                       std::vector<WeightSpec> weights, nn::ActivationFn activation)
    : KerasLayer(r.name(), r.class_name()),
      layer_(std::move(layer)),
      weights_(std::move(weights)),
      activation_(std::move(activation)) {}

nn::Module* UnaryLayer::module() { return weights_.empty() ? nullptr : layer_.get(); }

Value UnaryLayer::Apply(const std::vector<Value>& inputs, const CallOptions& options) {
  if (inputs.size() != 1) {
    return Value::Error(InvalidArgumentError("Keras layer " + class_name() + " '" + name() +
                                             "' takes 1 input, got " +
                                             std::to_string(inputs.size())));
  }
  Value y = (*layer_)(inputs[0], options.training);
  return activation_ ? activation_(y) : y;
}

bool UnaryLayer::FuseRelu() {
  auto* bn = dynamic_cast<nn::BatchNormalization*>(layer_.get());
  if (bn == nullptr || activation_) return false;
  bn->set_relu_output(true);
  return true;
}

bool UnaryLayer::FuseBiasOf(KerasLayer* producer) {
  auto* bn = dynamic_cast<nn::BatchNormalization*>(layer_.get());
  auto* p = dynamic_cast<UnaryLayer*>(producer);
  if (bn == nullptr || p == nullptr) return false;
  auto* conv = dynamic_cast<nn::Conv2D*>(p->layer_.get());
  if (conv == nullptr || !conv->use_bias() || conv->has_activation()) return false;
  conv->set_bias_handed_over(true);
  bn->set_input_bias([conv] { return conv->bias(); });
  return true;
}

bool UnaryLayer::IsPlainBatchNorm() const {
  return dynamic_cast<nn::BatchNormalization*>(layer_.get()) != nullptr && !activation_;
}

Value UnaryLayer::ApplyAddRelu(const Value& x, const Value& shortcut, bool shortcut_first,
                               const CallOptions& options) {
  auto* bn = dynamic_cast<nn::BatchNormalization*>(layer_.get());
  if (bn == nullptr || activation_) {
    return Value::Error(InternalError("Keras layer '" + name() +
                                      "' cannot fuse an Add + ReLU: not a BatchNormalization "
                                      "without activation"));
  }
  return bn->CallAddRelu(x, shortcut, options.training, shortcut_first);
}

Value StatefulLayer::Apply(const std::vector<Value>& inputs, const CallOptions& options) {
  if (inputs.size() != 1) {
    return Value::Error(InvalidArgumentError("Keras layer " + class_name() + " '" + name() +
                                             "' takes 1 input, got " +
                                             std::to_string(inputs.size())));
  }
  return (*layer_)(inputs[0], options.training);
}

bool FunctionLayer::FuseNormOf(KerasLayer* producer, size_t index) {
  auto* p = dynamic_cast<UnaryLayer*>(producer);
  if (!relu_fused_ || norm_ != nullptr || index > 1 || p == nullptr || !p->IsPlainBatchNorm()) {
    return false;
  }
  norm_ = p;
  norm_index_ = index;
  return true;
}

Value FunctionLayer::Apply(const std::vector<Value>& inputs, const CallOptions& options) {
  if (norm_ == nullptr) return fn_(inputs);
  if (inputs.size() != 2) {
    return Value::Error(InvalidArgumentError("Keras layer " + class_name() + " '" + name() +
                                             "' takes 2 inputs here, got " +
                                             std::to_string(inputs.size())));
  }
  return norm_->ApplyAddRelu(inputs[norm_index_], inputs[1 - norm_index_], norm_index_ == 1,
                             options);
}

std::vector<WeightPenalty> PenaltiesOf(const std::vector<WeightSpec>& weights) {
  std::vector<WeightPenalty> out;
  for (const WeightSpec& w : weights) {
    Variable v = w.get();
    if (v.valid() && w.regularizer.active()) {
      out.push_back({v, w.regularizer.l1, w.regularizer.l2});
    }
  }
  return out;
}

std::vector<std::pair<std::string, Variable>> WeightsOf(const std::vector<WeightSpec>& weights) {
  std::vector<std::pair<std::string, Variable>> out;
  for (const WeightSpec& w : weights) {
    Variable v = w.get();
    if (v.valid()) out.emplace_back(w.keras_name, v);
  }
  return out;
}

std::vector<std::pair<std::string, Variable>> UnaryLayer::KerasWeights() const {
  return WeightsOf(weights_);
}
std::vector<WeightPenalty> UnaryLayer::Penalties() const { return PenaltiesOf(weights_); }

}  // namespace internal

namespace {

const internal::MakerTable& Makers() {
  static const auto* table = [] {
    auto* t = new internal::MakerTable;
    internal::AddCoreMakers(t);
    internal::AddNormalizationMakers(t);
    internal::AddConvMakers(t);
    internal::AddSequenceMakers(t);
    internal::AddPreprocessingMakers(t);
    internal::AddAugmentMakers(t);
    internal::AddRegularizationMakers(t);
    internal::AddApplicationMakers(t);
    internal::AddMergeMakers(t);
    internal::AddShapeMakers(t);
    internal::AddMaskMakers(t);
    internal::AddRecurrentMakers(t);
    internal::AddActivationMakers(t);
    internal::AddAttentionMakers(t);
    return t;
  }();
  return *table;
}

std::string SupportedList() {
  std::string list;
  for (const std::string& n : SupportedKerasLayers()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

// Layers registered with RegisterKerasLayer, by registered name or "module.ClassName".
struct CustomLayers {
  std::mutex mu;
  std::map<std::string, CustomLayerMaker> makers;
};
CustomLayers& Custom() {
  static auto* custom = new CustomLayers;
  return *custom;
}

CustomLayerMaker FindCustom(const std::string& name) {
  std::lock_guard<std::mutex> lock(Custom().mu);
  auto it = Custom().makers.find(name);
  return it == Custom().makers.end() ? nullptr : it->second;
}

// What to do about a class Troupe does not have.
std::string HowToSupport(const std::string& module, const std::string& cls) {
  if (cls == "Lambda") {
    return "a Lambda layer holds Python code, which Troupe cannot run: write the function as a "
           "Keras layer class (@keras.saving.register_keras_serializable) and register its C++ "
           "twin with keras::RegisterKerasLayer (README: \"Your own Keras layers\"; "
           "examples/custom_model)";
  }
  if (module.rfind("keras.", 0) != 0 && module != "keras") {
    return "a custom layer class: register its C++ twin with keras::RegisterKerasLayer under "
           "its registered_name (README: \"Your own Keras layers\"; examples/custom_model)";
  }
  return "Troupe does not have this Keras layer yet; supported layers: " + SupportedList();
}

}  // namespace

Status RegisterKerasLayer(const std::string& name, CustomLayerMaker make) {
  if (name.empty() || !make) {
    return InvalidArgumentError("RegisterKerasLayer needs a class name and a maker");
  }
  if (Makers().count(name)) {
    return AlreadyExistsError("Keras layer " + name + " is built in; register another name");
  }
  std::lock_guard<std::mutex> lock(Custom().mu);
  if (!Custom().makers.emplace(name, std::move(make)).second) {
    return AlreadyExistsError("Keras layer " + name + " is already registered");
  }
  return Status::OK();
}

std::vector<std::string> SupportedKerasLayers() {
  std::vector<std::string> names;
  for (const auto& [key, maker] : Makers()) names.push_back(key);
  {
    std::lock_guard<std::mutex> lock(Custom().mu);
    for (const auto& [key, maker] : Custom().makers) names.push_back(key);
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// A registered custom layer for the envelope, or nullptr when none is.
Result<std::unique_ptr<KerasLayer>> MakeCustomLayer(const nlohmann::json& envelope,
                                                    const std::string& module,
                                                    const std::string& cls, int64_t seed,
                                                    bool* found) {
  CustomLayerMaker make;
  const nlohmann::json* registered =
      envelope.contains("registered_name") ? &envelope["registered_name"] : nullptr;
  if (registered != nullptr && registered->is_string()) {
    make = FindCustom(registered->get<std::string>());
  }
  if (!make) make = FindCustom(module + "." + cls);
  *found = static_cast<bool>(make);
  if (!make) return std::unique_ptr<KerasLayer>();
  const nlohmann::json* config = envelope.contains("config") ? &envelope["config"] : nullptr;
  if (config == nullptr || !config->is_object()) {
    return InvalidArgumentError("Keras layer " + cls + ": the envelope has no config object");
  }
  Result<std::unique_ptr<KerasLayer>> layer = make(*config, seed);
  if (layer.ok() && *layer == nullptr) {
    return InternalError("the maker registered for Keras layer " + cls + " returned no layer");
  }
  return layer;
}

}  // namespace

Result<std::unique_ptr<KerasLayer>> MakeKerasLayer(const nlohmann::json& envelope,
                                                   int64_t default_seed) {
  TROUPE_ASSIGN_OR_RETURN(internal::ConfigReader r, internal::ConfigReader::Open(envelope));
  // An entry without "module" is Keras 2's format; its classes are keras.layers ones.
  const std::string module = r.module().empty() ? "keras.layers" : r.module();
  auto it = Makers().find(module + "." + r.class_name());
  // A class registered with Keras under package "troupe" ("troupe>Name") is serialized with
  // the Python module it was defined in; Troupe files it under troupe.layers.
  const nlohmann::json* registered =
      envelope.contains("registered_name") ? &envelope["registered_name"] : nullptr;
  if (it == Makers().end() && registered != nullptr && registered->is_string() &&
      registered->get<std::string>() == "troupe>" + r.class_name()) {
    it = Makers().find("troupe.layers." + r.class_name());
  }
  if (it == Makers().end()) {
    bool found = false;
    Result<std::unique_ptr<KerasLayer>> custom =
        MakeCustomLayer(envelope, module, r.class_name(), default_seed, &found);
    if (found) return custom;
    return UnimplementedError("Keras layer " + module + "." + r.class_name() + " '" + r.name() +
                              "' is not supported: " + HowToSupport(module, r.class_name()));
  }
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<KerasLayer> layer, it->second(r, default_seed));
  TROUPE_RETURN_IF_ERROR(r.Finish());
  layer->set_dtype_policy(r.dtype_policy());
  return layer;
}

}  // namespace troupe::keras
