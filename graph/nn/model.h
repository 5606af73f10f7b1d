// Model: what the training loop trains. A Module whose Call maps a batch of features to
// outputs (logits), whose Loss scores them against the labels (what training minimizes and
// evaluation reports), built ahead of time from the shape of one example, and which says how its
// weights are laid out in a Keras checkpoint: KerasLayers() lists the Keras layers in order
// (after Keras' InputLayer), each with its weights under their Keras attribute names and in
// Keras' order, so tf.train.Checkpoint(model=keras_model) restores what Troupe writes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor_shape.h"
#include "graph/nn/compiled_loss.h"
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
  // The float32 scalar training minimizes for one batch: `outputs` of Call against int32
  // `labels` [N] (or [N, positions...] for [N, positions..., classes] outputs, a language
  // model's), as a mean over the batch and positions (the loop reports it times N as the
  // batch's loss sum, for training and evaluation alike). Default: CompiledLoss of loss_spec()
  // (graph/nn/compiled_loss.h; Keras' sparse categorical cross-entropy from logits unless set),
  // sum_over_batch_size. Override it for another loss or to add penalties (variables read
  // inside it are differentiated like those of Call).
  virtual Value Loss(const Value& labels, const Value& outputs);
  // The loss Loss computes (model.loss / model.from_logits of a config).
  const LossSpec& loss_spec() const { return loss_spec_; }
  void set_loss_spec(const LossSpec& spec) { loss_spec_ = spec; }
  // The activation the output layer applies: "softmax", "sigmoid", or "" (none, or unknown).
  virtual std::string OutputActivation() const { return ""; }
  // Default: one Keras layer per child module, in order, whose variables are a kernel and
  // an optional bias ("_kernel", "bias": Keras' Dense and Conv2D). Unimplemented naming the
  // child when it holds anything else; models with other layers override this.
  virtual Result<std::vector<KerasLayer>> KerasLayers() const;
  // True when the Keras twin is a Functional model (its layers sit at model/_operations/k in a
  // checkpoint), false for a Sequential one (model/_functional/_operations/k).
  virtual bool keras_functional() const { return false; }

 private:
  LossSpec loss_spec_;
};

}  // namespace troupe::nn
