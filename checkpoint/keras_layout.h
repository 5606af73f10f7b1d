// Object-graph layouts that match what Keras 3 (TensorFlow backend) and tf.random.Generator
// save, so a Keras model, optimizer and generator of the same structure restore Troupe's
// variables with tf.train.Checkpoint(...).restore(...).assert_existing_objects_matched(), and
// Troupe restores theirs. Names were read off Keras 3.x's _trackable_children():
//   model      -> _functional/_operations/<layer index>/<weight name>   (Dense: _kernel, bias)
//   optimizer  -> _iterations, _learning_rate (absent with a schedule), _trainable_variables/<i>,
//                 _variables/<j> (iterations, learning_rate, then each variable's slots),
//                 one list per slot kind (Adam: _momentums, _velocities; SGD: momentums)
//   generator  -> _state_var (int64 state; Philox: [counter lo, counter hi, key])
// Variables are borrowed; the same variable object may appear in several places (a DAG).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "checkpoint/trackable.h"

namespace troupe::ckpt {

// One Keras layer's weights by attribute name, e.g. {{"_kernel", k}, {"bias", b}}; empty for
// weightless layers (InputLayer, Flatten) that still occupy an index.
struct KerasLayerWeights {
  std::vector<std::pair<std::string, Trackable*>> weights;
};

// A keras.Sequential (model/_functional/_operations/k) or Functional (model/_operations/k)
// model: layers in Keras's operation order (index 0 is the InputLayer). A weight's attribute
// may be a path through sublayers ("_query_dense/_kernel" in MultiHeadAttention).
class KerasModelLayout : public TrackableObject {
 public:
  explicit KerasModelLayout(const std::vector<KerasLayerWeights>& layers, bool functional = false);
};

// A keras.optimizers.Optimizer. `slots` lists the per-variable slot kinds in the order Keras
// creates them, each as (list attribute name, one slot variable per trainable variable).
class KerasOptimizerLayout : public TrackableObject {
 public:
  KerasOptimizerLayout(Trackable* iterations, Trackable* learning_rate,
                       const std::vector<Trackable*>& trainable_variables,
                       const std::vector<std::pair<std::string, std::vector<Trackable*>>>& slots);
  // The general form, for any Keras optimizer: `variables` is Keras' `_variables` list in
  // order (iterations, learning_rate unless a schedule replaced it (nullptr then), EMA
  // averages, gradient accumulators, slots); `lists` are the optimizer's other attribute lists
  // (`_model_variables_moving_average`, `_accumulated_gradients`, `_momentums`, ...).
  KerasOptimizerLayout(Trackable* iterations, Trackable* learning_rate,
                       const std::vector<Trackable*>& trainable_variables,
                       const std::vector<Trackable*>& variables,
                       const std::vector<std::pair<std::string, std::vector<Trackable*>>>& lists);
};

// A tf.random.Generator: its state variable under `_state_var`.
class GeneratorLayout : public TrackableObject {
 public:
  explicit GeneratorLayout(Trackable* state_var) { Track("_state_var", state_var); }
};

}  // namespace troupe::ckpt
