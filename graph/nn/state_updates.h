// Non-trainable state that layers update in a training step (BatchNormalization's moving
// statistics). Outside a StateUpdateScope, UpdateState assigns at once (eager use, a single
// replica). While a scope is open on this thread — the training loop opens one while tracing
// a replica's step — it records the new value instead: replicas that share one process's
// variables never race on them, and the loop averages every replica's new value (in replica
// order, through the same deterministic reduction as the gradients) and assigns the mean once
// per step. For the linear moving-average update that mean equals tf.keras' ON_READ/MEAN
// moving statistics under MirroredStrategy, and it is the same bits for any process layout.
#pragma once

#include <utility>
#include <vector>

#include "core/status.h"
#include "graph/value.h"
#include "graph/variable.h"

namespace troupe::nn {

class StateUpdateScope {
 public:
  StateUpdateScope();
  ~StateUpdateScope();
  StateUpdateScope(const StateUpdateScope&) = delete;
  StateUpdateScope& operator=(const StateUpdateScope&) = delete;

  // (variable, its new value), in the order the layers made them; a variable updated twice
  // keeps its last value in its first slot.
  const std::vector<std::pair<Variable, Value>>& updates() const { return updates_; }

 private:
  friend Status UpdateState(const Variable& variable, const Value& value);
  std::vector<std::pair<Variable, Value>> updates_;
  StateUpdateScope* outer_;
};

// Assigns `value` to `variable`, or records it in the innermost scope on this thread.
Status UpdateState(const Variable& variable, const Value& value);

}  // namespace troupe::nn
