// Per-replica randomness for layers traced into a replica's step. While a ReplicaSeedScope is
// open on this thread (the training loop opens one while tracing replica r's step function),
// layers that draw random numbers (Dropout) take their seeds from the scope's seed input — an
// int32[2] the loop feeds per replica and step, derived from the coordinator's replica-hashed
// key — instead of their own seed variables, which replicas sharing one process's variables
// would race on. The k-th draw of a trace uses seed + [0, k], so the draws of one step differ,
// and a replica's stream depends only on its global id and the step: the same bits in 1x4,
// 2x2 and 4x1, and after a resume.
#pragma once

#include <optional>

#include "graph/value.h"

namespace troupe::nn {

class ReplicaSeedScope {
 public:
  // `seed`: int32 [2], usually a Function argument.
  explicit ReplicaSeedScope(Value seed);
  ~ReplicaSeedScope();
  ReplicaSeedScope(const ReplicaSeedScope&) = delete;
  ReplicaSeedScope& operator=(const ReplicaSeedScope&) = delete;

 private:
  friend std::optional<Value> NextReplicaSeed();
  Value seed_;
  int draws_ = 0;
  ReplicaSeedScope* outer_;
};

// The seed of the next draw inside the innermost scope on this thread; none outside a scope.
std::optional<Value> NextReplicaSeed();

}  // namespace troupe::nn
