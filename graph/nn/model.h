// Model: what the training loop trains. A Module whose Call maps a batch of features to
// outputs (logits), built ahead of time from the shape of one example, and which says how its
// weights are laid out in a Keras checkpoint: KerasLayers() lists the Keras layers in order
// (after Keras' InputLayer), each with its weights under their Keras attribute names and in
// Keras' order, so tf.train.Checkpoint(model=keras_model) restores what Troupe writes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor_shape.h"
#include "graph/nn/module.h"
#include "graph/value.h"

namespace troupe::nn {

// One Keras layer's weights: (attribute name, variable), e.g. ("_kernel", k), ("bias", b).
struct KerasLayer {
  std::string name;
  std::vector<std::pair<std::string, Variable>> weights;
};

class Model : public Module {
 public:
  using Module::Module;

  // Creates every variable for examples of `example_shape` (no batch dimension).
  virtual Status Build(const TensorShape& example_shape) = 0;
  // Outputs for a batch of features; `training` turns on dropout and the like.
  virtual Value Call(const Value& features, bool training) = 0;
  // Default: one Keras layer per child module, in order, whose variables are a kernel and
  // an optional bias ("_kernel", "bias": Keras' Dense and Conv2D). Unimplemented naming the
  // child when it holds anything else; models with other layers override this.
  virtual Result<std::vector<KerasLayer>> KerasLayers() const;
  // True when the Keras twin is a Functional model (its layers sit at model/_operations/k in a
  // checkpoint), false for a Sequential one (model/_functional/_operations/k).
  virtual bool keras_functional() const { return false; }
  // The training loss of a batch: default, sparse categorical cross-entropy of int labels and
  // logits, averaged over the batch and, for [batch, positions..., classes] outputs, over the
  // positions (Keras' SparseCategoricalCrossentropy(from_logits=True)).
  virtual Value Loss(const Value& labels, const Value& outputs);
};

}  // namespace troupe::nn
