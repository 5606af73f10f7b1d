// The order of a Functional model's layers as Keras itself computes it (keras/src/ops/
// function.py map_graph/_build_map): a depth-first walk from the output through each call's
// inputs numbers the layers by first visit; each call's depth is its distance from the output
// (a layer takes the largest depth of its calls); layers are listed by decreasing depth, ties
// by visit number. `model.layers`, the checkpoint's model/_operations/<k> and the order of
// model.trainable_variables (so the optimizer's slots) all follow it — which is not always
// the order of the JSON's "layers" list (a hand-written or generated JSON may differ).
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "graph/keras/json_util.h"

namespace troupe::keras {

// One call of a layer: the `index`-th call of `layer`, on `inputs` (in argument order).
struct LayerCall {
  std::string layer;
  int64_t index = 0;
  std::vector<TensorRef> inputs;
};

// Layer names in Keras' order, the input layer first. Calls the output does not depend on are
// left out (as Keras leaves them out of the model). InvalidArgument for a cycle or a tensor no
// call produces.
Result<std::vector<std::string>> KerasLayerOrder(const std::string& input_layer,
                                                 const std::vector<LayerCall>& calls,
                                                 const TensorRef& output);

}  // namespace troupe::keras
