#include "graph/func_graph.h"

#include "graph/variable.h"

namespace troupe {

std::vector<TensorSpec> FuncGraph::InputSpecs() const {
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (int id : inputs) specs.push_back(node(id).outputs[0]);
  return specs;
}

std::vector<TensorSpec> FuncGraph::OutputSpecs() const {
  std::vector<TensorSpec> specs;
  specs.reserve(outputs.size());
  for (NodeOut out : outputs) specs.push_back(spec(out));
  return specs;
}

Value FuncGraph::AddInput(const TensorSpec& spec, std::string_view name) {
  int id = AddPlaceholder(spec, name);
  inputs.push_back(id);
  return Value::Symbolic(shared_from_this(), {id, 0});
}

Result<NodeOut> FuncGraph::Resolve(const Value& v) {
  if (!v.ok()) return v.status();
  if (v.graph() == this) return v.node_out();
  if (!v.defined()) {
    return InvalidArgumentError(
        "an undefined Value (for example the gradient of an unconnected source) was used as an "
        "op input in graph '" +
        name() + "'");
  }
  auto it = resolved_.find(v.id());
  if (it != resolved_.end()) return it->second;
  if (!v.symbolic()) {
    NodeOut out{AddConst(v.eager_tensor()), 0};
    resolved_.emplace(v.id(), out);
    return out;
  }
  bool enclosing = false;
  for (FuncGraph* g = outer_.get(); g != nullptr; g = g->outer()) {
    if (g == v.graph()) enclosing = true;
  }
  if (!enclosing || !v.graph()->building()) {
    return InvalidArgumentError(
        "graph '" + name() + "' captured the external symbolic tensor '" +
        v.graph()->OutputName(v.node_out()) + "' of graph '" + v.graph()->name() +
        "'; the symbolic tensors of one function cannot be inputs of another (a tensor "
        "leaked out of its trace, e.g. through a global); pass it as an argument or use the "
        "function's return values");
  }
  Value outer_value = v;
  if (outer_.get() != v.graph()) {
    TROUPE_ASSIGN_OR_RETURN(NodeOut o, outer_->Resolve(v));
    outer_value = Value::Symbolic(outer_, o);
  }
  int ph = AddPlaceholder(v.spec(), v.graph()->node(v.node_out().node).name);
  inputs.push_back(ph);
  captures_.push_back(Capture{outer_value, ph});
  NodeOut out{ph, 0};
  resolved_.emplace(v.id(), out);
  // The same capture is reachable by the enclosing graph's value too (UnifyCaptures asks by
  // that one).
  resolved_.emplace(outer_value.id(), out);
  return out;
}

void FuncGraph::OrderStateful(int id, GraphOp::Effect effect, int64_t resource) {
  using Effect = GraphOp::Effect;
  auto dep = [&](int d) {
    if (d >= 0 && d != id) AddControlInput(id, d);
  };
  switch (effect) {
    case Effect::kNone:
      return;
    case Effect::kRead: {
      ResourceAccess& a = resources_[resource];
      dep(a.last_write);
      dep(last_barrier_);
      a.reads.push_back(id);
      return;
    }
    case Effect::kWrite: {
      ResourceAccess& a = resources_[resource];
      dep(a.last_write);
      for (int r : a.reads) dep(r);
      dep(last_side_effect_);
      dep(last_barrier_);
      a.last_write = id;
      a.reads.clear();
      return;
    }
    case Effect::kSideEffect:
      dep(last_side_effect_);
      for (auto& [r, a] : resources_) dep(a.last_write);
      last_side_effect_ = id;
      return;
    case Effect::kBarrier:
      dep(last_side_effect_);
      for (auto& [r, a] : resources_) {
        dep(a.last_write);
        for (int rd : a.reads) dep(rd);
        a.last_write = id;
        a.reads.clear();
      }
      last_side_effect_ = id;
      last_barrier_ = id;
      return;
  }
}

Result<std::vector<Value>> InlineGraph(const FuncGraph& g, const std::vector<Value>& inputs) {
  if (inputs.size() != g.inputs.size()) {
    return InvalidArgumentError("graph '" + g.name() + "' takes " +
                                std::to_string(g.inputs.size()) + " inputs, got " +
                                std::to_string(inputs.size()));
  }
  std::vector<std::vector<Value>> vals(static_cast<size_t>(g.num_nodes()));
  for (size_t i = 0; i < inputs.size(); ++i) vals[static_cast<size_t>(g.inputs[i])] = {inputs[i]};
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    std::vector<Value> ins;
    ins.reserve(n.inputs.size());
    for (NodeOut in : n.inputs)
      ins.push_back(vals[static_cast<size_t>(in.node)][static_cast<size_t>(in.index)]);
    std::vector<Value>& out = vals[static_cast<size_t>(id)];
    switch (n.kind) {
      case NodeKind::kPlaceholder:
        if (out.empty()) {
          return InternalError("graph '" + g.name() + "': placeholder '" + n.name +
                               "' is not an input");
        }
        continue;
      case NodeKind::kConst:
        out = {Value(n.value)};
        continue;
      case NodeKind::kKernel:
        out = Apply(n.op, ins, n.attrs, n.name);
        break;
      case NodeKind::kGraphOp:
        if (auto var = internal::VariableOfReadOp(*n.graph_op)) {
          out = {VariableFromState(var).Read()};
        } else {
          out = ApplyGraphOp(n.graph_op, ins, n.name);
        }
        break;
    }
    if (Status s = FirstError(out); !s.ok()) return s;
    if (static_cast<int>(out.size()) < n.num_outputs()) {
      return InternalError("replaying node '" + n.name + "' gave too few outputs");
    }
  }
  std::vector<Value> outputs;
  outputs.reserve(g.outputs.size());
  for (NodeOut o : g.outputs)
    outputs.push_back(vals[static_cast<size_t>(o.node)][static_cast<size_t>(o.index)]);
  return outputs;
}

}  // namespace troupe
