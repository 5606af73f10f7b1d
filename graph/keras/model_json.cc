#include "graph/keras/model_json.h"

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "graph/keras/json_util.h"
#include "graph/keras/keras_file.h"
#include "graph/keras/keras_order.h"
#include "graph/keras/model_loss.h"
#include "graph/keras/model_plan.h"
#include "graph/keras/nested_model.h"
#include "graph/nn/losses.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/tape.h"

namespace troupe::keras {

using nlohmann::json;

namespace {

bool IsKerasTensor(const json& j) {
  return j.is_object() && j.value("class_name", "") == "__keras_tensor__";
}

// Flattens a node's positional arguments: [KT], [[KT, KT]] (merge layers), [KT, KT] (MHA,
// the x + y op-layer). With `constants`, a number (the 3.0 of `x + 3.0`) is an argument too: an
// empty TensorRef in `out`, its value in `constants` under its position.
Status CollectTensors(const json& arg, const std::string& where, std::vector<TensorRef>* out,
                      std::map<size_t, double>* constants = nullptr) {
  if (IsKerasTensor(arg)) {
    const json* config = Find(arg, "config");
    if (config == nullptr) return InvalidArgumentError(where + ": a tensor has no config");
    const json* history = Find(*config, "keras_history");
    if (history == nullptr) return InvalidArgumentError(where + ": a tensor has no keras_history");
    TROUPE_ASSIGN_OR_RETURN(TensorRef ref, ParseTensorRef(*history, where));
    out->push_back(std::move(ref));
    return Status::OK();
  }
  if (arg.is_array()) {
    for (const json& a : arg) TROUPE_RETURN_IF_ERROR(CollectTensors(a, where, out, constants));
    return Status::OK();
  }
  if (constants != nullptr && arg.is_number() && !arg.is_number_unsigned() &&
      !arg.is_number_integer()) {
    (*constants)[out->size()] = arg.get<double>();
    out->push_back(TensorRef{});
    return Status::OK();
  }
  if (constants != nullptr && arg.is_number()) {
    (*constants)[out->size()] = static_cast<double>(arg.get<int64_t>());
    out->push_back(TensorRef{});
    return Status::OK();
  }
  return UnimplementedError(where + ": Troupe takes tensors and numbers as positional layer " +
                            "inputs, got " + arg.dump());
}

}  // namespace

KerasModel::KerasModel(std::string name) : nn::Model(std::move(name)) {}
KerasModel::~KerasModel() = default;

Result<std::string> KerasModelClass(const json& model) {
  if (!model.is_object()) {
    return InvalidArgumentError("not a Keras model JSON: expected an object, got " +
                                std::string(model.type_name()));
  }
  const std::string cls = model.value("class_name", "");
  const json* config = Find(model, "config");
  if (cls == "Sequential" && config != nullptr && Find(*config, "layers") != nullptr) return cls;
  if ((cls == "Functional" || cls == "Model") && config != nullptr &&
      Find(*config, "layers") != nullptr && Find(*config, "input_layers") != nullptr) {
    return std::string("Functional");
  }
  if (cls.empty()) {
    return InvalidArgumentError(
        "not a Keras model JSON: it has no \"class_name\" (write it with model.to_json())");
  }
  return InvalidArgumentError("not a Keras model JSON: class_name '" + cls +
                              "' is not Sequential or Functional with layers (write the model "
                              "with model.to_json())");
}

Result<std::string> KerasModelDTypePolicy(const json& model) {
  TROUPE_ASSIGN_OR_RETURN(std::string cls, KerasModelClass(model));
  const json& config = model["config"];
  std::string policy = "float32", where;
  auto take = [&](const json* dtype, const std::string& what) -> Status {
    TROUPE_ASSIGN_OR_RETURN(std::string name, DTypePolicyName(dtype, what));
    if (name.rfind("mixed_", 0) != 0) return Status::OK();
    if (policy != "float32" && name != policy) {
      return InvalidArgumentError("Keras model '" + config.value("name", "model") + "': " + where +
                                  " has the " + policy + " dtype policy and " + what + " has " +
                                  name +
                                  "; a model trains under one mixed policy, use one of them");
    }
    policy = name;
    where = what;
    return Status::OK();
  };
  TROUPE_RETURN_IF_ERROR(take(Find(config, "dtype"), "the model"));
  for (const json& layer : config["layers"]) {
    if (layer.value("class_name", "") == "InputLayer") continue;  // its dtype is the input's
    const json* layer_config = Find(layer, "config");
    const json* name = layer_config != nullptr ? Find(*layer_config, "name") : nullptr;
    const std::string what =
        "layer '" + (name != nullptr && name->is_string() ? name->get<std::string>() : "?") + "'";
    TROUPE_RETURN_IF_ERROR(
        take(layer_config != nullptr ? Find(*layer_config, "dtype") : nullptr, what));
  }
  return policy;
}

namespace {
// The model config a .json or .keras file holds, parsed.
Result<json> ReadModelJson(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadModelConfigText(path));
  json model = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (model.is_discarded()) {
    return InvalidArgumentError(path + " is not valid JSON (write it with model.to_json())");
  }
  return model;
}
}  // namespace

Result<std::string> KerasModelFileDTypePolicy(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(json model, ReadModelJson(path));
  Result<std::string> policy = KerasModelDTypePolicy(model);
  if (!policy.ok()) return policy.status().WithContext(path);
  return policy;
}

Result<std::unique_ptr<KerasModel>> KerasModel::FromJson(const json& model, int64_t seed) {
  // The loader checks what it reads, but a value of an unexpected JSON type deep in a config
  // (a number where Keras writes a string) surfaces as nlohmann's exception: an error, too.
  try {
    return Load(model, seed);
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("malformed Keras model JSON: ") + e.what());
  }
}

Result<std::unique_ptr<KerasModel>> KerasModel::Load(const json& model, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(std::string cls, KerasModelClass(model));
  const json& config = model["config"];
  std::unique_ptr<KerasModel> m(new KerasModel(config.value("name", "model")));
  m->json_ = model;
  m->functional_ = cls == "Functional";
  TROUPE_ASSIGN_OR_RETURN(m->dtype_policy_, KerasModelDTypePolicy(model));
  Status s = m->functional_ ? m->LoadFunctional(config, seed) : m->LoadSequential(config, seed);
  if (!s.ok()) return s.WithContext("Keras model '" + m->name() + "'");
  return m;
}

Result<std::unique_ptr<KerasModel>> KerasModel::FromFile(const std::string& path, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(json model, ReadModelJson(path));
  Result<std::unique_ptr<KerasModel>> m = FromJson(model, seed);
  if (!m.ok()) return m.status().WithContext(path);
  return m;
}

Status KerasModel::AddInput(const json& input_layer) {
  TROUPE_ASSIGN_OR_RETURN(const json* config, RequireObject(input_layer, "config", "InputLayer"));
  const json* shape = Find(*config, "batch_shape");
  if (shape == nullptr) shape = Find(*config, "batch_input_shape");
  if (shape == nullptr || !shape->is_array() || shape->empty()) {
    return InvalidArgumentError("InputLayer has no batch_shape");
  }
  // A null dimension (keras.applications' default (None, None, 3)) is taken from the data's
  // examples when the model is built.
  std::vector<int64_t> dims;
  for (size_t i = 1; i < shape->size(); ++i) {
    const json& d = (*shape)[i];
    if (d.is_null()) {
      dims.push_back(TensorShape::kUnknownDim);
      continue;
    }
    if (!d.is_number_integer() || d.get<int64_t>() <= 0) {
      return InvalidArgumentError("InputLayer shape " + shape->dump() +
                                  ": every dimension must be a positive size or null");
    }
    dims.push_back(d.get<int64_t>());
  }
  TROUPE_ASSIGN_OR_RETURN(input_shape_, TensorShape::FromDims(dims));
  TROUPE_ASSIGN_OR_RETURN(input_dtype_,
                          ParseDType(config->value("dtype", "float32"), "InputLayer"));
  for (const char* key : {"sparse", "ragged"}) {
    if (config->value(key, false)) {
      return UnimplementedError(std::string("InputLayer option ") + key + "=true");
    }
  }
  input_name_ = config->value("name", input_layer.value("name", "input_layer"));
  return Status::OK();
}

Result<KerasLayer*> KerasModel::AddLayer(const json& envelope, int64_t seed) {
  // Each layer draws its unseeded initializers from its own block of seeds.
  const int64_t layer_seed = seed + 1000 * static_cast<int64_t>(layers_.size() + 1);
  std::unique_ptr<KerasLayer> layer;
  if (IsNestedModel(envelope)) {
    Result<std::unique_ptr<KerasLayer>> nested = MakeNestedModelLayer(envelope, layer_seed);
    if (!nested.ok()) {
      return nested.status().WithContext("nested model '" + envelope.value("name", "") + "'");
    }
    layer = std::move(*nested);
  } else {
    TROUPE_ASSIGN_OR_RETURN(layer, MakeKerasLayer(envelope, layer_seed));
  }
  for (const auto& other : layers_) {
    if (other->name() == layer->name() || layer->name() == input_name_) {
      return InvalidArgumentError("two layers are named '" + layer->name() +
                                  "'; Keras layer names are unique within a model");
    }
  }
  layers_.push_back(std::move(layer));
  return layers_.back().get();
}

Status KerasModel::OrderLikeKeras(const std::vector<LayerCall>& calls, const TensorRef& output) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<std::string> order,
                          KerasLayerOrder(input_name_, calls, output));
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (const auto& layer : layers_) {
    if (!position.count(layer->name())) {
      return InvalidArgumentError("layer '" + layer->name() +
                                  "' does not lead to the model's output (Keras leaves such "
                                  "layers out of the model); remove it");
    }
  }
  std::stable_sort(layers_.begin(), layers_.end(), [&](const auto& a, const auto& b) {
    return position[a->name()] < position[b->name()];
  });
  for (const auto& layer : layers_) {
    if (nn::Module* m = layer->module()) AddModule(m);
  }
  return Status::OK();
}

Status KerasModel::LoadSequential(const json& config, int64_t seed) {
  const json& layers = config["layers"];
  if (!layers.is_array()) return InvalidArgumentError("\"layers\" is not a list");
  plan_ = std::make_unique<Plan>();
  std::string previous;
  for (const json& envelope : layers) {
    if (envelope.value("class_name", "") == "InputLayer") {
      if (!previous.empty() || !input_name_.empty()) {
        return InvalidArgumentError("an InputLayer must come first in a Sequential model");
      }
      TROUPE_RETURN_IF_ERROR(AddInput(envelope));
      previous = input_name_;
      continue;
    }
    if (previous.empty()) {
      const json* shape = Find(config, "build_input_shape");
      if (shape == nullptr || shape->is_null()) {
        return InvalidArgumentError(
            "the Sequential model has no input shape: start it with keras.Input(shape) or build "
            "it before model.to_json()");
      }
      TROUPE_RETURN_IF_ERROR(AddInput(json{{"config", {{"batch_shape", *shape}}}}));
      previous = input_name_;
    }
    TROUPE_ASSIGN_OR_RETURN(KerasLayer * layer, AddLayer(envelope, seed));
    if (nn::Module* m = layer->module()) AddModule(m);
    plan_->nodes.push_back(Node{layer, 0, {TensorRef{previous, 0, 0}}, {}});
    plan_->nodes.back().relu = IsReluActivation(envelope);
    plan_->nodes.back().linear = IsLinear(envelope);
    previous = layer->name();
  }
  if (layers_.empty()) return InvalidArgumentError("the model has no layers");
  plan_->output = TensorRef{previous, 0, 0};
  FuseLayerPairs();
  return Status::OK();
}

namespace {

// Keyword arguments of a layer call that Troupe understands; anything else is refused.
// A `mask` keyword argument: the tensor (or per-input list, null for none) Keras' functional
// graph records for a layer whose call() takes a mask (the mask that Embedding(mask_zero=True)
// or Masking made, computed by a NotEqual op-layer of its own).
Status CollectMasks(const json& mask, const std::string& where, std::vector<TensorRef>* out) {
  if (mask.is_null()) {
    out->push_back(TensorRef{});
    return Status::OK();
  }
  if (mask.is_array()) {
    for (const json& m : mask) TROUPE_RETURN_IF_ERROR(CollectMasks(m, where, out));
    return Status::OK();
  }
  return CollectTensors(mask, where, out);
}

Status ParseCallKwargs(const json& kwargs, const std::string& where, CallOptions* options,
                       std::vector<TensorRef>* tensor_kwargs, std::vector<TensorRef>* masks) {
  if (kwargs.is_null()) return Status::OK();
  if (!kwargs.is_object()) return InvalidArgumentError(where + ": kwargs is not an object");
  for (const char* key : {"query", "value", "key"}) {
    if (const json* t = Find(kwargs, key))
      TROUPE_RETURN_IF_ERROR(CollectTensors(*t, where, tensor_kwargs));
  }
  for (const auto& [key, value] : kwargs.items()) {
    if (key == "query" || key == "value" || key == "key") continue;
    if (key == "use_causal_mask" && value.is_boolean()) {
      options->use_causal_mask = value.get<bool>();
    } else if (key == "mask" && !value.is_null()) {
      TROUPE_RETURN_IF_ERROR(CollectMasks(value, where, masks));
    } else if ((key == "mask" || key == "attention_mask") && value.is_null()) {
      continue;
    } else if (key == "training" && (value.is_null() || value.is_boolean())) {
      continue;  // recorded when the model was built; the training loop's own flag wins, as in
                 // Keras
    } else {
      return UnimplementedError(where + ": call argument " + key + "=" + value.dump() +
                                " is not supported (supported: use_causal_mask)");
    }
  }
  return Status::OK();
}

}  // namespace

Status KerasModel::LoadFunctional(const json& config, int64_t seed) {
  const json& layers = config["layers"];
  if (!layers.is_array()) return InvalidArgumentError("\"layers\" is not a list");
  // Inputs and outputs: one tensor each.
  std::vector<TensorRef> inputs, outputs;
  TROUPE_RETURN_IF_ERROR(CollectRefs(config["input_layers"], "input_layers", &inputs));
  TROUPE_RETURN_IF_ERROR(
      CollectRefs(config.value("output_layers", json()), "output_layers", &outputs));
  if (inputs.size() != 1 || outputs.size() != 1) {
    return UnimplementedError("Troupe trains models with one input and one output; this one has " +
                              std::to_string(inputs.size()) + " inputs and " +
                              std::to_string(outputs.size()) + " outputs");
  }
  // Keras numbers a nested Functional model's calls from 1 in input_layers/output_layers
  // (its node 0 is the one it was built with), and from 0 in inbound_nodes (functional.py's
  // get_tensor subtracts 1 for Functional layers only).
  for (const json& envelope : layers) {
    if (envelope.value("class_name", "") == "Functional" &&
        envelope.value("name", "") == outputs[0].layer && outputs[0].node > 0) {
      --outputs[0].node;
    }
  }
  std::vector<Node> pending;
  for (const json& envelope : layers) {
    const std::string name = envelope.value("name", "");
    if (envelope.value("class_name", "") == "InputLayer") {
      if (!input_name_.empty()) return UnimplementedError("more than one InputLayer");
      TROUPE_RETURN_IF_ERROR(AddInput(envelope));
      if (input_name_ != inputs[0].layer) {
        return InvalidArgumentError("input_layers names '" + inputs[0].layer +
                                    "' but the InputLayer is '" + input_name_ + "'");
      }
      continue;
    }
    TROUPE_ASSIGN_OR_RETURN(KerasLayer * layer, AddLayer(envelope, seed));
    const json* nodes = Find(envelope, "inbound_nodes");
    if (nodes == nullptr || !nodes->is_array() || nodes->empty()) {
      return InvalidArgumentError("layer '" + layer->name() +
                                  "' is not connected (no inbound_nodes)");
    }
    for (size_t k = 0; k < nodes->size(); ++k) {
      const json& node = (*nodes)[k];
      const std::string where = "layer '" + layer->name() + "' call " + std::to_string(k);
      if (!node.is_object()) {
        return UnimplementedError(where + ": a Keras 2 (legacy) node; save the model with Keras 3");
      }
      Node n{layer, static_cast<int64_t>(k), {}, {}};
      n.relu = IsReluActivation(envelope);
      n.linear = IsLinear(envelope);
      TROUPE_RETURN_IF_ERROR(
          CollectTensors(node.value("args", json::array()), where, &n.inputs, &n.constants));
      TROUPE_RETURN_IF_ERROR(ParseCallKwargs(node.value("kwargs", json::object()), where,
                                             &n.options, &n.inputs, &n.mask_inputs));
      pending.push_back(std::move(n));
    }
  }
  if (input_name_.empty()) return InvalidArgumentError("the model has no InputLayer");
  std::vector<LayerCall> calls;
  for (const Node& n : pending) calls.push_back(LayerCall{n.layer->name(), n.index, n.tensors()});
  TROUPE_RETURN_IF_ERROR(OrderLikeKeras(calls, outputs[0]));
  // Replay calls in an order where each input exists (Keras retries until all are made).
  plan_ = std::make_unique<Plan>();
  std::set<TensorRef> made = {TensorRef{input_name_, 0, 0}};
  while (!pending.empty()) {
    size_t before = pending.size();
    for (auto it = pending.begin(); it != pending.end();) {
      bool ready = true;
      for (const TensorRef& in : it->tensors()) ready = ready && made.count(in) > 0;
      if (!ready) {
        ++it;
        continue;
      }
      made.insert(TensorRef{it->layer->name(), it->index, 0});
      plan_->nodes.push_back(std::move(*it));
      it = pending.erase(it);
    }
    if (pending.size() == before) {
      for (const TensorRef& in : pending.front().tensors()) {
        if (made.count(in) == 0) {
          return InvalidArgumentError("layer '" + pending.front().layer->name() + "' uses tensor " +
                                      in.ToString() + ", which no layer of the model produces");
        }
      }
    }
  }
  if (made.count(outputs[0]) == 0) {
    return InvalidArgumentError("output tensor " + outputs[0].ToString() + " is never produced");
  }
  plan_->output = outputs[0];
  FuseLayerPairs();
  return Status::OK();
}

namespace {

// A call's positional argument: the tensor it names, or its constant as a scalar of the dtype of
// the call's first tensor (a Python number in a Keras op takes the tensor's dtype).
Value ArgumentValue(const std::map<TensorRef, Value>& values, const TensorRef& ref,
                    const std::map<size_t, double>& constants, size_t position,
                    const std::vector<TensorRef>& inputs) {
  auto c = constants.find(position);
  if (c == constants.end()) return values.at(ref);
  Value scalar = ops::Scalar(static_cast<float>(c->second));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (constants.count(i)) continue;
    const Value& like = values.at(inputs[i]);
    if (like.ok() && like.dtype() != DType::kFloat32) scalar = ops::Cast(scalar, like.dtype());
    break;
  }
  return scalar;
}

}  // namespace

Value KerasModel::Run(const Value& features, bool training, std::vector<TensorShape>* shapes) {
  std::map<TensorRef, Value> values;
  std::map<TensorRef, Value> masks;                    // Keras masks of the tensors that carry one
  std::map<TensorRef, const KerasLayer*> mask_makers;  // the layer that made each mask
  Value input = features;
  if (input.ok() && input.dtype() != input_dtype_) input = ops::Cast(input, input_dtype_);
  values[TensorRef{input_name_, 0, 0}] = input;
  for (Node& node : plan_->nodes) {
    const TensorRef out_ref{node.layer->name(), node.index, 0};
    if (node.fused_to || node.run_by_reader) {
      const Value& in = values[node.inputs[0]];
      if (shapes != nullptr) shapes->push_back(in.shape());
      values[out_ref] = in;
      if (masks.count(node.inputs[0])) {
        masks[out_ref] = masks[node.inputs[0]];
        mask_makers[out_ref] = mask_makers[node.inputs[0]];
      }
      continue;
    }
    std::vector<Value> args;
    CallOptions options = node.options;
    options.training = training;
    bool has_mask = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      args.push_back(ArgumentValue(values, node.inputs[i], node.constants, i, node.inputs));
      // The mask the call names (a Functional model's `mask` argument), else the one the
      // input carries (Keras' propagation, what a Sequential model has).
      Value mask;
      if (i < node.mask_inputs.size()) {
        if (!node.mask_inputs[i].layer.empty()) mask = values[node.mask_inputs[i]];
      } else if (!node.constants.count(i)) {
        auto m = masks.find(node.inputs[i]);
        if (m != masks.end()) mask = m->second;
      }
      if (mask.defined() && mask.ok() && mask.dtype() != DType::kFloat32) {
        mask = ops::Cast(mask, DType::kFloat32);
      }
      options.masks.push_back(mask);
      has_mask = has_mask || mask.defined();
    }
    if (!has_mask) options.masks.clear();
    if (has_mask && node.layer->ConsumesMask()) {
      for (const TensorRef& in : node.inputs) {
        if (mask_makers.count(in)) mask_uses_.insert({node.layer, mask_makers[in]});
      }
    }
    if (Status rule = MaskRule(node, has_mask); !rule.ok()) return Value::Error(rule);
    CallOptions apply_options = options;
    if (!node.layer->ConsumesMask()) apply_options.masks.clear();
    std::optional<PrecisionScope> float32;
    if (dtype_policy_ != "float32" && node.layer->dtype_policy() == "float32") {
      float32.emplace(DType::kFloat32);
    }
    Value out = node.layer->Apply(args, apply_options);
    Value mask = out.ok() ? node.layer->ComputeMask(args, options) : Value();
    float32.reset();
    if (!out.ok()) {
      return Value::Error(out.status().WithContext("layer '" + node.layer->name() + "' (" +
                                                   node.layer->class_name() + ")"));
    }
    if (shapes != nullptr) shapes->push_back(out.shape());
    values[out_ref] = out;
    if (mask.defined()) {
      if (!mask.ok()) {
        return Value::Error(
            mask.status().WithContext("the mask of layer '" + node.layer->name() + "'"));
      }
      masks[out_ref] = mask;
      if (node.layer->MaskOpCount() > 0) {
        mask_makers[out_ref] = node.layer;
      } else if (!node.inputs.empty() && mask_makers.count(node.inputs[0])) {
        mask_makers[out_ref] = mask_makers[node.inputs[0]];
      }
    }
  }
  return values[plan_->output];
}

Status KerasModel::Build(const TensorShape& example_shape) {
  if (!example_shape.IsFullyDefined()) {
    return InvalidArgumentError("model '" + name() + "' takes inputs of shape " +
                                input_shape_.ToString() +
                                ": give the size of each null dimension (the data's example "
                                "shape, or --input-shape for `troupe model show`)");
  }
  if (!example_shape.IsCompatibleWith(input_shape_)) {
    return InvalidArgumentError("model '" + name() + "' takes inputs of shape " +
                                input_shape_.ToString() + " but the data's examples have shape " +
                                example_shape.ToString() +
                                " (change the model's keras.Input shape or the data)");
  }
  input_shape_ = example_shape;
  InitScope eager;
  std::vector<int64_t> dims = {1};
  for (int i = 0; i < input_shape_.rank(); ++i) dims.push_back(input_shape_.dim(i));
  TROUPE_ASSIGN_OR_RETURN(TensorShape batch_shape, TensorShape::FromDims(dims));
  TROUPE_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Zeros(input_dtype_, batch_shape));
  built_shapes_.clear();
  Value out = Run(Value(zeros), /*training=*/false, &built_shapes_);
  return out.status();
}

Value KerasModel::Call(const Value& features, bool training) {
  return Run(features, training, nullptr);
}

std::vector<Value> KerasModel::ActivityLosses() const {
  std::vector<Value> out;
  for (const auto& layer : layers_) {
    for (Value& loss : layer->ActivityLosses()) out.push_back(std::move(loss));
  }
  return out;
}

std::vector<WeightPenalty> KerasModel::Penalties() const {
  std::vector<WeightPenalty> out;
  for (const auto& layer : layers_) {
    for (WeightPenalty& p : layer->Penalties()) out.push_back(std::move(p));
  }
  return out;
}

Value KerasModel::Loss(const Value& labels, const Value& outputs) {
  Value loss = nn::Model::Loss(labels, outputs);
  for (const WeightPenalty& p : Penalties()) {
    if (p.l1 != 0) {
      loss = ops::Add(loss, ops::Mul(ops::Scalar(static_cast<float>(p.l1)),
                                     ops::Sum(ops::Abs(Value(p.variable)))));
    }
    if (p.l2 != 0) {
      loss = ops::Add(loss, ops::Mul(ops::Scalar(static_cast<float>(p.l2)),
                                     ops::Sum(ops::Square(Value(p.variable)))));
    }
  }
  // Keras' add_loss of the last call (ActivityRegularization), made in this trace.
  for (const Value& activity : ActivityLosses()) loss = ops::Add(loss, activity);
  return loss;
}

std::string KerasModel::OutputActivation() const { return OutputLayerActivation(json_); }

}  // namespace troupe::keras
