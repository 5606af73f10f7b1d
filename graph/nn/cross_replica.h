// Sums across the replicas of a data-parallel job, in the middle of a step (synchronized
// BatchNormalization's statistics). While a CrossReplicaScope is open on this thread — the
// training loop opens one while tracing a replica's step — SumAcrossReplicas(x) applies the
// scope's function (which adds an op that all-reduces x over every replica, in replica-id
// order, and whose gradient all-reduces the incoming gradient the same way). Outside a scope
// there is one replica, and the sum is x itself.
#pragma once

#include <functional>

#include "graph/value.h"

namespace troupe::nn {

// Sums `local` elementwise over all replicas; every replica receives the total. Every replica
// must make the same calls in the same order.
using CrossReplicaSum = std::function<Value(const Value& local)>;

class CrossReplicaScope {
 public:
  explicit CrossReplicaScope(CrossReplicaSum sum);
  ~CrossReplicaScope();
  CrossReplicaScope(const CrossReplicaScope&) = delete;
  CrossReplicaScope& operator=(const CrossReplicaScope&) = delete;

 private:
  friend Value SumAcrossReplicas(const Value& local);
  CrossReplicaSum sum_;
  CrossReplicaScope* outer_;
};

Value SumAcrossReplicas(const Value& local);

}  // namespace troupe::nn
