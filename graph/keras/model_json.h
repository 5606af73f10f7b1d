// A Keras 3 model defined by its JSON (`model.to_json()`, or the config.json inside a .keras
// file): a Sequential stack or a Functional DAG (one tensor used by several layers, Add,
// Concatenate, the `x + y` op-layer), built from the layers graph/keras/layer_factory.h knows.
//
// The model has Keras' variables, with Keras' names ("<layer>/<weight>") and creation order,
// and lays them out in a checkpoint as Keras does (Sequential: model/_functional/_operations/k,
// Functional: model/_operations/k, k counting the InputLayer and op-layers), so
// tf.train.Checkpoint(model=keras.models.model_from_json(same_json)) restores what Troupe
// writes. Everything the loader does not support is an error naming the layer and the option.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/tensor_shape.h"
#include "graph/keras/json_util.h"
#include "graph/keras/keras_order.h"
#include "graph/keras/layer_factory.h"
#include "graph/nn/model.h"

namespace troupe::keras {

// One row of a Keras-style summary: a layer as built for a given input shape.
struct LayerSummary {
  std::string name;
  std::string class_name;
  std::vector<std::string> output_shapes;  // "(None, 28, 28, 6)", one per call of the layer
  int64_t params = 0;
  int64_t trainable_params = 0;
  std::vector<std::string> inbound;  // producers' layer names (Functional)
};

class KerasModel : public nn::Model {
 public:
  ~KerasModel() override;

  // `model` is what model.to_json() returns, parsed. `seed` seeds every initializer whose
  // config has `seed: null`.
  static Result<std::unique_ptr<KerasModel>> FromJson(const nlohmann::json& model, int64_t seed);
  // A .json file holding model.to_json(), or a .keras file (its config.json).
  static Result<std::unique_ptr<KerasModel>> FromFile(const std::string& path, int64_t seed);

  // Fails naming both shapes when `example_shape` differs from the InputLayer's shape.
  Status Build(const TensorShape& example_shape) override;
  Value Call(const Value& features, bool training) override;
  Value Loss(const Value& labels, const Value& outputs) override;
  Result<std::vector<nn::KerasLayer>> KerasLayers() const override;
  bool keras_functional() const override { return functional_; }
  std::string OutputActivation() const override;

  // The InputLayer's shape without the batch dimension, and its dtype.
  const TensorShape& input_shape() const { return input_shape_; }
  DType input_dtype() const { return input_dtype_; }
  bool functional() const { return functional_; }
  // The JSON this model was built from.
  const nlohmann::json& config_json() const { return json_; }
  // KerasModelDTypePolicy of the JSON. When it is a mixed policy, layers whose own policy is
  // "float32" (Keras' advice for a softmax output) run with the policy suspended, as in Keras;
  // when it is "float32", train.precision's policy (if any) covers every layer, as if Keras'
  // global policy had been set before the model was built.
  const std::string& dtype_policy() const { return dtype_policy_; }
  // Valid after Build.
  std::vector<LayerSummary> Summary() const;
  // The weight penalties (kernel_regularizer, ...) of every layer, nested models' included.
  std::vector<WeightPenalty> Penalties() const;
  // The losses the layers added in their last call (ActivityRegularization), nested models'
  // included; Loss adds them, in the trace of the Call that made them.
  std::vector<Value> ActivityLosses() const;

 private:
  struct Node;
  struct Plan;
  explicit KerasModel(std::string name);

  static Result<std::unique_ptr<KerasModel>> Load(const nlohmann::json& model, int64_t seed);
  Status LoadSequential(const nlohmann::json& config, int64_t seed);
  Status LoadFunctional(const nlohmann::json& config, int64_t seed);
  Status AddInput(const nlohmann::json& input_layer);
  Result<KerasLayer*> AddLayer(const nlohmann::json& envelope, int64_t seed);
  // Sorts layers_ into Keras' model.layers order (keras_order.h) and adds their modules in it,
  // so variables, checkpoint indices and optimizer slots follow Keras.
  Status OrderLikeKeras(const std::vector<LayerCall>& calls, const TensorRef& output);
  Value Run(const Value& features, bool training, std::vector<TensorShape>* shapes);
  // OK unless `node` would drop a mask Keras applies in that layer (see KerasLayer).
  Status MaskRule(const Node& node, bool has_mask) const;
  void FuseLayerPairs();

  nlohmann::json json_;
  bool functional_ = false;
  std::string input_name_;
  TensorShape input_shape_;
  DType input_dtype_ = DType::kFloat32;
  std::vector<std::unique_ptr<KerasLayer>> layers_;  // in Keras' order, InputLayer excluded
  std::unique_ptr<Plan> plan_;
  std::vector<TensorShape> built_shapes_;  // one per plan node, after Build
  // (consumer, maker) of each mask a layer consumed in a run: a Sequential model's checkpoint
  // layout counts the op-layers Keras records for such a mask (KerasLayer::MaskOpCount).
  std::set<std::pair<const KerasLayer*, const KerasLayer*>> mask_uses_;
  // KerasLayers() of a Sequential model with mask_uses_: Keras' order with the mask op-layers.
  Result<std::vector<nn::KerasLayer>> SequentialLayersWithMaskOps() const;
  std::string dtype_policy_ = "float32";
};

// The model's class as the config names it: "Sequential" or "Functional".
Result<std::string> KerasModelClass(const nlohmann::json& model);

// The compute policy Keras trains the model under: "mixed_float16" or "mixed_bfloat16" when
// the model or any layer has that policy, else "float32". InvalidArgument naming two layers
// when both mixed policies appear (Keras' loss scaling is per model). Layer configs are not
// otherwise checked here.
Result<std::string> KerasModelDTypePolicy(const nlohmann::json& model);
// The same for a .json or .keras file (errors as KerasModel::FromFile's).
Result<std::string> KerasModelFileDTypePolicy(const std::string& path);

}  // namespace troupe::keras
