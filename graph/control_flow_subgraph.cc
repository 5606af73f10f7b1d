#include "graph/control_flow_subgraph.h"

#include <algorithm>

#include "graph/ops.h"
#include "graph/tape.h"

namespace troupe::control_flow_internal {

Result<std::shared_ptr<FuncGraph>> TraceSubgraph(const std::string& name,
                                                 const std::vector<TensorSpec>& specs,
                                                 const SubgraphFn& fn) {
  auto g = std::make_shared<FuncGraph>(name, CurrentGraphPtr());
  BuildScope scope(g);
  std::vector<Value> inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    inputs.push_back(g->AddInput(specs[i], specs[i].name.empty() ? "input" : specs[i].name));
  }
  Outputs out = fn(inputs);
  TROUPE_RETURN_IF_ERROR(out.status());
  TROUPE_RETURN_IF_ERROR(g->status());
  for (size_t i = 0; i < out.values().size(); ++i) {
    const Value& v = out.values()[i];
    if (!v.defined()) {
      return InvalidArgumentError(name + " output " + std::to_string(i) + " is undefined");
    }
    TROUPE_ASSIGN_OR_RETURN(NodeOut o, g->Resolve(v));
    g->outputs.push_back(o);
  }
  return g;
}

Result<std::vector<Value>> UnifyCaptures(const std::vector<FuncGraph*>& graphs,
                                         size_t num_declared) {
  std::vector<Value> all;
  std::vector<int64_t> ids;
  for (FuncGraph* g : graphs) {
    for (const Capture& c : g->captures()) {
      if (std::find(ids.begin(), ids.end(), c.outer.id()) == ids.end()) {
        ids.push_back(c.outer.id());
        all.push_back(c.outer);
      }
    }
  }
  for (FuncGraph* g : graphs) {
    std::vector<int> inputs(g->inputs.begin(), g->inputs.begin() + static_cast<long>(num_declared));
    for (const Value& v : all) {
      TROUPE_ASSIGN_OR_RETURN(NodeOut o, g->Resolve(v));
      inputs.push_back(o.node);
    }
    g->inputs = std::move(inputs);
  }
  for (FuncGraph* g : graphs) g->FinishBuilding();
  return all;
}

bool HasState(const FuncGraph& g) {
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (g.node(i).stateful) return true;
  }
  return false;
}

Result<bool> ScalarBool(const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::kBool || t.num_elements() != 1) {
    return InvalidArgumentError(what + " must be a bool scalar, got " +
                                TensorSpec::From(t).ToString());
  }
  return *t.data<bool>();
}

std::vector<Value> Concat(std::vector<Value> a, const std::vector<Value>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<TensorSpec> SpecsOf(const std::vector<Value>& vs, const std::string& prefix) {
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < vs.size(); ++i) {
    TensorSpec s = vs[i].spec();
    s.name = prefix + std::to_string(i);
    specs.push_back(s);
  }
  return specs;
}

Result<std::shared_ptr<FuncGraph>> GradientSubgraph(const std::string& name,
                                                    const std::shared_ptr<FuncGraph>& fwd,
                                                    const std::vector<TensorSpec>& x_specs,
                                                    const std::vector<TensorSpec>& dy_specs,
                                                    const std::vector<int>& diff_x,
                                                    const std::vector<int>& diff_out) {
  std::vector<TensorSpec> specs = x_specs;
  specs.insert(specs.end(), dy_specs.begin(), dy_specs.end());
  return TraceSubgraph(name, specs, [&](const std::vector<Value>& in) -> Outputs {
    std::vector<Value> xs(in.begin(), in.begin() + static_cast<long>(x_specs.size()));
    std::vector<Value> ds(in.begin() + static_cast<long>(x_specs.size()), in.end());
    GradientTape tape;
    std::vector<Value> sources;
    for (int i : diff_x) {
      tape.Watch(xs[static_cast<size_t>(i)]);
      sources.push_back(xs[static_cast<size_t>(i)]);
    }
    Result<std::vector<Value>> outs = InlineGraph(*fwd, xs);
    if (!outs.ok()) return outs.status();
    std::vector<Value> targets;
    for (int k : diff_out) targets.push_back((*outs)[static_cast<size_t>(k)]);
    if (targets.empty() || sources.empty()) {
      std::vector<Value> zeros;
      for (const Value& s : sources) zeros.push_back(ops::ZerosLike(s));
      return zeros;
    }
    Result<std::vector<Value>> g = tape.Gradient(targets, sources, ds, UnconnectedGradients::kZero);
    if (!g.ok()) return g.status();
    return *g;
  });
}

Status RecordAndReturn(const Status& s) {
  if (!s.ok()) {
    if (FuncGraph* g = CurrentGraph()) g->RecordError(s);
  }
  return s;
}

}  // namespace troupe::control_flow_internal
