// Building blocks of the Keras layer factory (internal): the KerasLayer implementations and
// the per-file tables of layer makers that layer_factory.cc joins.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/keras/config_reader.h"
#include "graph/keras/layer_factory.h"
#include "graph/nn/activations.h"
#include "graph/nn/module.h"

namespace troupe::keras::internal {

// One Keras weight: its attribute path, how to reach the nn variable once built, and the
// regularizer the config gives it.
struct WeightSpec {
  std::string keras_name;
  std::function<Variable()> get;
  Regularizer regularizer;
};

// A Keras layer that is one nn::Layer called on one input, then an optional activation.
class UnaryLayer : public KerasLayer {
 public:
  UnaryLayer(const ConfigReader& r, std::unique_ptr<nn::Layer> layer,
             std::vector<WeightSpec> weights = {}, nn::ActivationFn activation = nullptr);
  // Weightless layers report no module (those with state are StatefulLayers).
  nn::Module* module() override;
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override;
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override;
  std::vector<WeightPenalty> Penalties() const override;
  bool FuseRelu() override;  // a BatchNormalization without an activation of its own
  bool FuseBiasOf(KerasLayer* producer) override;  // a BatchNormalization after a Conv2D
  // Relu(layer(x) + shortcut) when the layer is a BatchNormalization without activation
  // (nn::BatchNormalization::CallAddRelu), else an error.
  Value ApplyAddRelu(const Value& x, const Value& shortcut, bool shortcut_first,
                     const CallOptions& options);
  bool IsPlainBatchNorm() const;

 private:
  std::unique_ptr<nn::Layer> layer_;
  std::vector<WeightSpec> weights_;
  nn::ActivationFn activation_;
};

// A weightless Keras layer whose nn layer holds state (a seed generator: the random
// regularization and augmentation layers, StochasticDepth): the model owns its module, and Keras
// lists no weights for it.
class StatefulLayer : public KerasLayer {
 public:
  StatefulLayer(const ConfigReader& r, std::unique_ptr<nn::Layer> layer)
      : KerasLayer(r.name(), r.class_name()), layer_(std::move(layer)) {}
  nn::Module* module() override { return layer_.get(); }
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override;
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }

 private:
  std::unique_ptr<nn::Layer> layer_;
};

// A weightless Keras layer computed from all its inputs (Add, Concatenate). `relu_fn`, when
// given, computes Relu(fn(inputs)) (fused) and lets FuseRelu() switch to it.
class FunctionLayer : public KerasLayer {
 public:
  using Fn = std::function<Value(const std::vector<Value>&)>;
  FunctionLayer(const ConfigReader& r, Fn fn, Fn relu_fn = nullptr)
      : KerasLayer(r.name(), r.class_name()), fn_(std::move(fn)), relu_fn_(std::move(relu_fn)) {}
  nn::Module* module() override { return nullptr; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override;
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }
  bool FuseRelu() override {
    if (!relu_fn_) return false;
    fn_ = relu_fn_;
    relu_fused_ = true;
    return true;
  }
  bool FuseNormOf(KerasLayer* producer, size_t index) override;

 private:
  Fn fn_;
  Fn relu_fn_;
  bool relu_fused_ = false;
  UnaryLayer* norm_ = nullptr;  // FuseNormOf's producer, run on input norm_index_
  size_t norm_index_ = 0;
};

// Builds one layer from its (opened) config; `seed` is the base of its initializers' default
// seeds (variable k of the layer uses seed + k).
using Maker = std::function<Result<std::unique_ptr<KerasLayer>>(ConfigReader& r, int64_t seed)>;
// Keyed by "module.ClassName".
using MakerTable = std::map<std::string, Maker>;

void AddCoreMakers(MakerTable* table);
void AddNormalizationMakers(MakerTable* table);
void AddConvMakers(MakerTable* table);
void AddSequenceMakers(MakerTable* table);
void AddPreprocessingMakers(MakerTable* table);
void AddAugmentMakers(MakerTable* table);
void AddRegularizationMakers(MakerTable* table);
void AddApplicationMakers(MakerTable* table);
void AddMergeMakers(MakerTable* table);
void AddShapeMakers(MakerTable* table);
void AddMaskMakers(MakerTable* table);
void AddRecurrentMakers(MakerTable* table);
void AddActivationMakers(MakerTable* table);
void AddAttentionMakers(MakerTable* table);

// Penalties for the specs whose variable exists and whose regularizer is active.
std::vector<WeightPenalty> PenaltiesOf(const std::vector<WeightSpec>& weights);
std::vector<std::pair<std::string, Variable>> WeightsOf(const std::vector<WeightSpec>& weights);

}  // namespace troupe::keras::internal
