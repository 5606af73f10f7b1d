#include "graph/nn/cross_replica.h"

namespace troupe::nn {
namespace {

thread_local CrossReplicaScope* g_scope = nullptr;

}  // namespace

CrossReplicaScope::CrossReplicaScope(CrossReplicaSum sum) : sum_(std::move(sum)), outer_(g_scope) {
  g_scope = this;
}

CrossReplicaScope::~CrossReplicaScope() { g_scope = outer_; }

Value SumAcrossReplicas(const Value& local) {
  if (g_scope == nullptr || !g_scope->sum_) return local;
  return g_scope->sum_(local);
}

}  // namespace troupe::nn
