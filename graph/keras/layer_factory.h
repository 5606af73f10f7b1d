// Keras layers from their JSON config: the one place that knows which Keras 3 layer classes
// Troupe supports and how each one's config maps onto an nn layer. A model loader
// (model_json.h) wires the layers into a Sequential or Functional graph; this file builds one
// layer at a time.
//
// Contract:
// - MakeKerasLayer takes one layer envelope as Keras serializes it
//   ({"module", "class_name", "config", ...}) and dispatches on (module, class_name), so the
//   op-layer `keras.src.ops.numpy.Add` that `x + y` produces and `keras.layers.Add` are both
//   understood. A class Troupe does not support, or a config option it does not implement
//   (groups != 1, a constraint, channels_first, a dtype policy other than float32,
//   mixed_float16 and mixed_bfloat16, ...), is an
//   InvalidArgument/Unimplemented error naming the class, the layer's name, the option and the
//   supported list — never a silent approximation.
// - Initializers with `seed: null` draw from `default_seed` (+ a per-variable offset), so a
//   model's initial weights depend only on the job seed; a seeded Keras initializer gives the
//   same bits as Keras (graph/nn/initializers.h).
// - Apply() calls the layer on its positional inputs (flattened in Keras' argument order:
//   Add/Concatenate get every merged tensor, MultiHeadAttention gets query, value[, key]).
// - KerasWeights() lists the weights under their Keras attribute paths, in Keras' creation
//   order (own trainable, own non-trainable, then sublayers), e.g. Dense: {"_kernel", "bias"};
//   BatchNormalization: {"gamma", "beta", "moving_mean", "moving_variance"};
//   MultiHeadAttention: {"_query_dense/_kernel", "_query_dense/bias", ...}. This is the layout
//   tf.train.Checkpoint(model=keras_model) uses.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "graph/nn/module.h"
#include "graph/value.h"

namespace troupe::keras {

// How the layer is called (the Keras call's keyword arguments that Troupe honours).
struct CallOptions {
  bool training = false;
  bool use_causal_mask = false;  // MultiHeadAttention
};

// A weight penalty Keras adds to the loss: l1 * sum(|w|) + l2 * sum(w^2) (no 1/2).
struct WeightPenalty {
  Variable variable;
  double l1 = 0;
  double l2 = 0;
};

class KerasLayer {
 public:
  virtual ~KerasLayer() = default;
  const std::string& name() const { return name_; }
  const std::string& class_name() const { return class_name_; }
  // The config's dtype policy ("float32", "mixed_float16", "mixed_bfloat16"), "" when none.
  const std::string& dtype_policy() const { return dtype_policy_; }
  void set_dtype_policy(std::string policy) { dtype_policy_ = std::move(policy); }
  // The nn module holding this layer's variables (nullptr for weightless layers); the model
  // adds it as a child, so variable paths are "<layer name>/<weight name>".
  virtual nn::Module* module() = 0;
  virtual Value Apply(const std::vector<Value>& inputs, const CallOptions& options) = 0;
  virtual std::vector<std::pair<std::string, Variable>> KerasWeights() const = 0;
  virtual std::vector<WeightPenalty> Penalties() const { return {}; }
  // Asks the layer to return Relu(output) from now on, so that a model can drop the ReLU
  // activation that alone consumes this layer's output and let the layer fuse it
  // (BatchNormalization, Add). False, and nothing changes, for layers that cannot.
  virtual bool FuseRelu() { return false; }
  // Asks the layer to add the bias of `producer` (a Conv2D without activation whose output
  // only this layer reads) to its input itself, and the producer to skip that add, so that the
  // add can be fused (BatchNormalization). False, and nothing changes, where that cannot be.
  virtual bool FuseBiasOf(KerasLayer* /*producer*/) { return false; }
  // Asks this layer (an Add of two inputs whose ReLU it fuses) to run `producer` (a
  // BatchNormalization without activation whose output only input `index` of this layer reads)
  // itself, fused with the add and the ReLU; the model then passes the producer's input in that
  // input's place. False, and nothing changes, where that cannot be.
  virtual bool FuseNormOf(KerasLayer* /*producer*/, size_t /*index*/) { return false; }

 protected:
  KerasLayer(std::string name, std::string class_name)
      : name_(std::move(name)), class_name_(std::move(class_name)) {}

 private:
  std::string name_;
  std::string class_name_;
  std::string dtype_policy_;
};

// `envelope` is one entry of a model config's "layers" (InputLayer excluded).
Result<std::unique_ptr<KerasLayer>> MakeKerasLayer(const nlohmann::json& envelope,
                                                   int64_t default_seed);

// "module.ClassName" of every supported layer, sorted (for error messages and docs).
std::vector<std::string> SupportedKerasLayers();

}  // namespace troupe::keras
