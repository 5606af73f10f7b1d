// LeNet-5 as a Module, laid out like the Swift LeNet of the checkpoint seed:
//   conv1 (5x5, 6 filters, SAME, relu) -> pool1 (2x2 average) -> conv2 (5x5, 16 filters, VALID,
//   relu) -> pool2 (2x2 average) -> flatten (400) -> fc1 (120, relu) -> fc2 (84, relu) ->
//   fc3 (10 logits).
// Variables: conv1/filter, conv1/bias, conv2/filter, conv2/bias, fc1/weight, fc1/bias, ...
// (NamedVariables()); in a Keras checkpoint each layer's "_kernel" and "bias". The model zoo
// registers it as "lenet5" (graph/models/registry.h).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/nn/layers.h"
#include "graph/nn/losses.h"
#include "graph/nn/model.h"
#include "graph/nn/optimizers.h"

namespace troupe::models {

struct LeNetOptions {
  nn::Pool2D::Kind pool = nn::Pool2D::Kind::kAvg;  // the Swift model; kMax for the classic
  int64_t seed = 1;  // glorot_uniform seeds are seed, seed+1, ... per layer in order
};

class LeNet : public nn::Model {
 public:
  explicit LeNet(LeNetOptions options = {});

  // Logits [N, 10] for images [N, 28, 28, 1] (float32).
  Value Call(const Value& images, bool training) override;
  Value operator()(const Value& images, bool training = false) { return Call(images, training); }
  // Creates every variable for 28x28x1 inputs (the only shape it takes).
  Status Build(const TensorShape& example_shape) override;
  Status Build() { return Build(TensorShape{28, 28, 1}); }

  nn::Conv2D conv1;
  nn::Pool2D pool1;
  nn::Conv2D conv2;
  nn::Pool2D pool2;
  nn::Flatten flatten;
  nn::Dense fc1;
  nn::Dense fc2;
  nn::Dense fc3;
};

// One training step (to be traced by a Function): forward, Keras' sparse categorical cross
// entropy from logits, gradients of every trainable variable, one optimizer update. Returns
// the loss. `grads_out`, when given, receives the gradients (in TrainableVariables() order).
Value LeNetTrainStep(LeNet& model, nn::Optimizer& optimizer, const Value& images,
                     const Value& labels, std::vector<Value>* grads_out = nullptr);

}  // namespace troupe::models
