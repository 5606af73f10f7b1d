#include "graph/tape.h"

#include <algorithm>

#include "graph/func_graph.h"
#include "graph/gradients.h"
#include "graph/graph_op.h"
#include "graph/precision.h"

namespace troupe {
namespace {

thread_local std::vector<GradientTape*> g_tapes;

std::string SpecList(const std::vector<Value>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    out +=
        (i ? ", " : "") + (values[i].ok() ? values[i].spec().ToString() : std::string("<error>"));
  }
  return out + "]";
}

// Sum of the contributions to one gradient, in a fixed (recording) order.
Value Accumulate(const std::vector<Value>& parts) {
  if (parts.size() == 1) return parts[0];
  return Apply1("AddN", parts);
}

bool HasGradient(const OpCall& call) {
  if (call.graph_op) return call.graph_op->differentiable();
  return LookupGradient(call.op) != nullptr;
}

}  // namespace

namespace internal {

int ActiveTapeCount() { return static_cast<int>(g_tapes.size()); }

void RecordOnTapes(std::string_view op, const AttrMap& attrs,
                   const std::shared_ptr<GraphOp>& graph_op, const std::vector<Value>& inputs,
                   const std::vector<Value>& outputs) {
  FuncGraph* graph = CurrentGraph();
  std::shared_ptr<OpCall> call;
  for (GradientTape* tape : g_tapes) {
    if (!tape->RecordsIn(graph)) continue;
    bool tracked = false;
    for (const Value& v : inputs) tracked |= tape->Tracks(v);
    if (!tracked) continue;
    if (!call) {
      call = std::make_shared<OpCall>();
      call->op = std::string(op);
      call->attrs = attrs;
      call->graph_op = graph_op;
      if (!outputs.empty() && outputs[0].symbolic()) {
        call->node_name = outputs[0].graph()->node(outputs[0].node_out().node).name;
      }
      call->inputs = inputs;
      call->outputs = outputs;
      call->compute = CurrentComputeDType();
    }
    tape->Record(call);
  }
}

void NoteVariableReadOnTapes(const Variable& variable, const Value& read) {
  FuncGraph* graph = CurrentGraph();
  for (GradientTape* tape : g_tapes) {
    if (tape->RecordsIn(graph)) tape->NoteVariableRead(variable, read);
  }
}

}  // namespace internal

GradientTape::GradientTape(bool persistent, bool watch_accessed_variables)
    : graph_(CurrentGraph()),
      persistent_(persistent),
      watch_accessed_variables_(watch_accessed_variables) {
  g_tapes.push_back(this);
}

GradientTape::~GradientTape() {
  auto it = std::find(g_tapes.begin(), g_tapes.end(), this);
  if (it != g_tapes.end()) g_tapes.erase(it);
}

void GradientTape::Watch(const Value& value) {
  if (value.ok() && value.defined()) tracked_.insert(value.id());
}

void GradientTape::Watch(const Variable& variable) {
  if (!variable.valid()) return;
  if (watched_var_ids_.insert(variable.id()).second) watched_vars_.push_back(variable);
}

void GradientTape::Record(std::shared_ptr<OpCall> call) {
  for (const Value& v : call->outputs) {
    if (v.defined()) tracked_.insert(v.id());
  }
  entries_.push_back(std::move(call));
}

void GradientTape::NoteVariableRead(const Variable& variable, const Value& read) {
  const bool watched = watched_var_ids_.count(variable.id()) > 0;
  if (!watched) {
    if (!watch_accessed_variables_ || !variable.trainable()) return;
    Watch(variable);
  }
  tracked_.insert(read.id());
  variable_reads_.emplace(read.id(), variable);
}

std::vector<Variable> GradientTape::watched_variables() const { return watched_vars_; }

Result<std::vector<Value>> GradientTape::Gradient(const Value& target,
                                                  const std::vector<Value>& sources,
                                                  const Value& output_gradient,
                                                  UnconnectedGradients unconnected) {
  std::vector<Value> seeds;
  if (output_gradient.defined()) seeds.push_back(output_gradient);
  return Gradient(std::vector<Value>{target}, sources, seeds, unconnected);
}

Result<std::vector<Value>> GradientTape::Gradient(const Value& target,
                                                  const std::vector<Variable>& sources,
                                                  UnconnectedGradients unconnected) {
  if (!target.ok()) return target.status();
  if (used_ && !persistent_) {
    return FailedPreconditionError(
        "GradientTape.Gradient can only be called once on a non-persistent tape");
  }
  used_ = true;
  StopRecording pause(*this);
  // Deterministic order: walk the reads in id order (ids grow in program order).
  std::vector<std::pair<int64_t, size_t>> reads;
  for (const auto& [id, var] : variable_reads_) {
    for (size_t s = 0; s < sources.size(); ++s) {
      if (var == sources[s]) reads.emplace_back(id, s);
    }
  }
  std::sort(reads.begin(), reads.end());
  std::vector<int64_t> read_ids;
  for (auto& [id, s] : reads) read_ids.push_back(id);
  std::vector<std::vector<Value>> per_source(sources.size());
  std::unordered_map<int64_t, std::vector<Value>> grads;
  std::vector<Value> targets{target};
  Status s = Backprop(targets, {}, read_ids, &grads);
  if (!s.ok()) return s;
  std::vector<Value> result(sources.size());
  for (auto& [id, src] : reads) {
    auto it = grads.find(id);
    if (it == grads.end()) continue;
    for (Value& part : it->second) per_source[src].push_back(part);
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!per_source[i].empty()) {
      result[i] = Accumulate(per_source[i]);
    } else if (unconnected == UnconnectedGradients::kZero) {
      result[i] = Apply1("ZerosLike", {sources[i].Read()});
    }
    if (!result[i].ok()) return result[i].status();
  }
  return result;
}

Result<std::vector<Value>> GradientTape::Gradient(const std::vector<Value>& targets,
                                                  const std::vector<Value>& sources,
                                                  const std::vector<Value>& output_gradients,
                                                  UnconnectedGradients unconnected) {
  for (const Value& t : targets) {
    if (!t.ok()) return t.status();
  }
  if (used_ && !persistent_) {
    return FailedPreconditionError(
        "GradientTape.Gradient can only be called once on a non-persistent tape");
  }
  used_ = true;
  StopRecording pause(*this);
  std::vector<int64_t> ids;
  for (const Value& s : sources) {
    if (!s.ok()) return s.status();
    ids.push_back(s.id());
  }
  std::unordered_map<int64_t, std::vector<Value>> grads;
  TROUPE_RETURN_IF_ERROR(Backprop(targets, output_gradients, ids, &grads));
  std::vector<Value> result(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    auto it = grads.find(ids[i]);
    if (it != grads.end() && !it->second.empty()) {
      result[i] = Accumulate(it->second);
    } else if (unconnected == UnconnectedGradients::kZero) {
      result[i] = Apply1("ZerosLike", {sources[i]});
    }
    if (!result[i].ok()) return result[i].status();
  }
  return result;
}

Status GradientTape::Backprop(const std::vector<Value>& targets,
                              const std::vector<Value>& output_gradients,
                              const std::vector<int64_t>& source_ids,
                              std::unordered_map<int64_t, std::vector<Value>>* grads) {
  // Seeds and sums in float32; each gradient function runs under its op's recorded policy.
  PrecisionScope float32(DType::kFloat32);
  // Entries downstream of a source (forward sweep) and upstream of a target (backward sweep).
  std::unordered_set<int64_t> from_source(source_ids.begin(), source_ids.end());
  std::vector<char> relevant(entries_.size(), 0);
  for (size_t e = 0; e < entries_.size(); ++e) {
    const OpCall& call = *entries_[e];
    bool hit = false;
    for (const Value& v : call.inputs) hit |= from_source.count(v.id()) > 0;
    if (!hit) continue;
    relevant[e] = 1;
    for (const Value& v : call.outputs) {
      if (v.defined()) from_source.insert(v.id());
    }
  }
  std::unordered_set<int64_t> to_target;
  for (const Value& t : targets) to_target.insert(t.id());
  std::vector<char> on_path(entries_.size(), 0);
  for (size_t e = entries_.size(); e-- > 0;) {
    if (!relevant[e]) continue;
    const OpCall& call = *entries_[e];
    bool hit = false;
    for (const Value& v : call.outputs) hit |= to_target.count(v.id()) > 0;
    if (!hit) continue;
    on_path[e] = 1;
    for (const Value& v : call.inputs) to_target.insert(v.id());
  }
  // Seeds.
  for (size_t t = 0; t < targets.size(); ++t) {
    Value seed = t < output_gradients.size() && output_gradients[t].defined()
                     ? output_gradients[t]
                     : Apply1("OnesLike", {targets[t]});
    if (!seed.ok()) return seed.status();
    (*grads)[targets[t].id()].push_back(seed);
  }
  // Backward sweep.
  for (size_t e = entries_.size(); e-- > 0;) {
    if (!on_path[e]) continue;
    const OpCall& call = *entries_[e];
    std::vector<Value> dys(call.outputs.size());
    bool any = false;
    for (size_t k = 0; k < call.outputs.size(); ++k) {
      auto it = grads->find(call.outputs[k].id());
      if (it == grads->end() || it->second.empty()) continue;
      dys[k] = Accumulate(it->second);
      if (!dys[k].ok()) return dys[k].status();
      // Collapse so a later consumer does not add the parts again.
      it->second = {dys[k]};
      any = true;
    }
    if (!any) continue;
    std::vector<Value> dxs;
    Status s;
    if (!HasGradient(call)) {
      s = InvalidArgumentError("no gradient for " + call.Describe() +
                               ": the op is not differentiable");
    } else {
      PrecisionScope precision(call.compute);
      if (call.graph_op) {
        s = call.graph_op->Gradient(call, dys, &dxs);
      } else {
        s = (*LookupGradient(call.op))(call, dys, &dxs);
      }
    }
    if (!s.ok()) {
      return Status(s.code(), "gradient: " + s.message() + "; inputs " + SpecList(call.inputs) +
                                  ", outputs " + SpecList(call.outputs) +
                                  " (stop the gradient before this op, or do not ask for "
                                  "gradients through it)");
    }
    if (Status fe = FirstError(dxs); !fe.ok()) {
      return fe.WithContext("gradient of " + call.Describe());
    }
    for (size_t i = 0; i < dxs.size() && i < call.inputs.size(); ++i) {
      if (!dxs[i].defined()) continue;
      if (!to_target.count(call.inputs[i].id()) || !from_source.count(call.inputs[i].id()))
        continue;
      (*grads)[call.inputs[i].id()].push_back(dxs[i]);
    }
  }
  // A source the target depends on that received no gradient: the path is cut by an op
  // without a gradient (TF would silently return None). Name the op.
  for (int64_t id : source_ids) {
    if (!to_target.count(id) || grads->count(id)) continue;
    std::unordered_set<int64_t> reach{id};
    for (size_t e = 0; e < entries_.size(); ++e) {
      if (!on_path[e]) continue;
      const OpCall& call = *entries_[e];
      bool hit = false;
      for (const Value& v : call.inputs) hit |= reach.count(v.id()) > 0;
      if (!hit) continue;
      for (const Value& v : call.outputs) reach.insert(v.id());
      bool cut = !HasGradient(call);
      for (const Value& v : call.outputs) cut |= v.defined() && !IsFloating(v.dtype());
      if (cut) {
        return InvalidArgumentError("gradient: the target depends on a source only through " +
                                    call.Describe() + ", which is not differentiable; inputs " +
                                    SpecList(call.inputs) + ", outputs " + SpecList(call.outputs) +
                                    " (no gradient flows through it; use a differentiable "
                                    "op or do not ask for this gradient)");
      }
    }
  }
  return Status::OK();
}

}  // namespace troupe
