#include "graph/nn/replica_random.h"

#include "graph/ops.h"

namespace troupe::nn {
namespace {

thread_local ReplicaSeedScope* g_scope = nullptr;

}  // namespace

ReplicaSeedScope::ReplicaSeedScope(Value seed) : seed_(std::move(seed)), outer_(g_scope) {
  g_scope = this;
}

ReplicaSeedScope::~ReplicaSeedScope() { g_scope = outer_; }

std::optional<Value> NextReplicaSeed() {
  if (g_scope == nullptr) return std::nullopt;
  const int k = g_scope->draws_++;
  if (k == 0) return g_scope->seed_;
  return ops::Add(g_scope->seed_, Value(Tensor::FromVector<int32_t>({0, k})));
}

}  // namespace troupe::nn
