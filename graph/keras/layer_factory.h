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
//   (a constraint, channels_first, a dtype policy other than float32, mixed_float16 and
//   mixed_bfloat16, ...), is an
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

#include <functional>
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
  // Keras masks of the inputs, one per input: a float32 [batch, time] tensor of 1 (keep) and 0
  // (masked), or an undefined Value() where the input carries no mask. Set (non-empty) only when
  // some input has a mask, and then given only to layers whose ConsumesMask() is true.
  std::vector<Value> masks;
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
  // Losses Keras' add_loss records during a call (ActivityRegularization: the activity
  // penalty over the batch size): scalar Values made by the last Apply, which a model adds to
  // the loss it trains on (in the same trace as that Apply).
  virtual std::vector<Value> ActivityLosses() const { return {}; }
  // Keras masks (Embedding(mask_zero=True), Masking): a layer that makes a mask or reads one
  // overrides these two. ConsumesMask: Apply reads options.masks. ComputeMask: the mask of the
  // output (Keras' compute_mask), an undefined Value() for none; called after Apply with the same
  // inputs and options. The default passes the first input's mask on for the layers Keras lets
  // a mask through unchanged (Dense, Activation, Dropout, the normalizations, ...) and drops it
  // for layers that do not support masking, as Keras does. A layer that Keras would apply the
  // mask in, but that does not consume it here, is refused by the model (PassesMaskUnchanged).
  virtual bool ConsumesMask() const { return false; }
  virtual Value ComputeMask(const std::vector<Value>& inputs, const CallOptions& options) const;
  // Keras' supports_masking for this class without an own compute_mask or mask use in call.
  bool PassesMaskUnchanged() const;
  // Keras' supports_masking (the layer is meant to see masks: it uses or passes them).
  bool SupportsMasking() const;
  // The op-layers Keras' graph chains on this layer's input to compute the mask the layer makes
  // (Embedding(mask_zero=True): 1, NotEqual; Masking: 2, NotEqual then Any), 0 for none. A
  // Sequential model counts them in its checkpoint layout where a later layer consumes the
  // mask, as its Keras twin's _functional/_operations does; a Functional model's JSON lists
  // them as layers.
  virtual int MaskOpCount() const { return 0; }
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

// "module.ClassName" of every supported layer, sorted (for error messages and docs); the
// classes registered with RegisterKerasLayer are listed under their registered names.
std::vector<std::string> SupportedKerasLayers();

// A Keras layer class of your own (a Python class the model uses, or a Lambda rewritten as
// one): `make` builds it from the layer's JSON "config" object (name, trainable, dtype and the
// class's own keys; refuse the keys you do not implement, naming them) and `seed`, the base of
// its initializers' default seeds. Subclass KerasLayer for the layer itself.
using CustomLayerMaker =
    std::function<Result<std::unique_ptr<KerasLayer>>(const nlohmann::json& config, int64_t seed)>;
// Registers `make` for the class Keras serializes with `name`: the registered_name that
// @keras.saving.register_keras_serializable(package="my_package") writes ("my_package>MyLayer"),
// or "module.ClassName". InvalidArgument for an empty name or maker, AlreadyExists for a name
// taken (built-in classes included). Call it before loading the model (e.g. from main).
//
//   keras::RegisterKerasLayer("my_package>Scale", [](const nlohmann::json& config, int64_t) {
//     return std::unique_ptr<keras::KerasLayer>(new ScaleLayer(config));
//   });
Status RegisterKerasLayer(const std::string& name, CustomLayerMaker make);

}  // namespace troupe::keras
