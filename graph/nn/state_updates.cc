#include "graph/nn/state_updates.h"

namespace troupe::nn {
namespace {

thread_local StateUpdateScope* g_scope = nullptr;

}  // namespace

StateUpdateScope::StateUpdateScope() : outer_(g_scope) { g_scope = this; }

StateUpdateScope::~StateUpdateScope() { g_scope = outer_; }

Status UpdateState(const Variable& variable, const Value& value) {
  if (!value.ok()) return value.status();
  if (g_scope == nullptr) return variable.Assign(value);
  for (auto& [v, update] : g_scope->updates_) {
    if (v.id() == variable.id()) {
      update = value;
      return Status::OK();
    }
  }
  g_scope->updates_.emplace_back(variable, value);
  return Status::OK();
}

}  // namespace troupe::nn
