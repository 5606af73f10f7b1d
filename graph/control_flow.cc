#include "graph/control_flow.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "graph/executor.h"
#include "graph/func_graph.h"
#include "graph/graph_op.h"
#include "graph/ops.h"
#include "graph/row_ops.h"
#include "graph/tape.h"

namespace troupe {
namespace {

using SubgraphFn = std::function<Outputs(const std::vector<Value>& inputs)>;

// Traces `fn` into a new graph nested in the current one, with placeholders for `specs`.
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

// Gives every graph the same trailing inputs: the union of what any of them captured from the
// enclosing graph. Returns those enclosing values (the op's extra inputs) and finishes the
// graphs.
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

// `shape` fits `spec` (every known dim of spec is matched).
bool IsCompatibleSubshape(const TensorShape& shape, const TensorShape& spec) {
  if (spec.unknown_rank()) return true;
  if (shape.unknown_rank() || shape.rank() != spec.rank()) return false;
  for (int i = 0; i < spec.rank(); ++i) {
    if (spec.dim(i) >= 0 && shape.dim(i) != spec.dim(i)) return false;
  }
  return true;
}

bool HasState(const FuncGraph& g) {
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (g.node(i).stateful) return true;
  }
  return false;
}

// Lazily built executor of a subgraph, shared by all runs.
class LazyExecutor {
 public:
  explicit LazyExecutor(std::shared_ptr<FuncGraph> g) : graph_(std::move(g)) {}
  Result<std::vector<Tensor>> Run(std::span<const Tensor> inputs) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ex_) {
        TROUPE_ASSIGN_OR_RETURN(ex_, Executor::Create(graph_));
      }
    }
    return ex_->Run(inputs);
  }
  const std::shared_ptr<FuncGraph>& graph() const { return graph_; }

 private:
  std::shared_ptr<FuncGraph> graph_;
  std::mutex mu_;
  std::unique_ptr<Executor> ex_;
};

Result<bool> ScalarBool(const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::kBool || t.num_elements() != 1) {
    return InvalidArgumentError(what + " must be a bool scalar, got " +
                                TensorSpec::From(t).ToString());
  }
  return *t.data<bool>();
}

Status CheckPredSpec(const Value& pred, const std::string& name) {
  TensorSpec s = pred.spec();
  if (s.dtype != DType::kBool || (!s.shape.unknown_rank() && s.shape.rank() != 0)) {
    return InvalidArgumentError(name + ": the predicate must be a bool scalar, got " +
                                s.ToString());
  }
  return Status::OK();
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

// ------------------------------------------------------------------------------------ If

class IfOp final : public GraphOp {
 public:
  IfOp(std::shared_ptr<FuncGraph> then_graph, std::shared_ptr<FuncGraph> else_graph,
       std::vector<TensorSpec> out_specs, std::string name)
      : then_(then_graph),
        else_(else_graph),
        out_specs_(std::move(out_specs)),
        name_(std::move(name)),
        stateful_(HasState(*then_graph) || HasState(*else_graph)) {}

  std::string_view type() const override { return "If"; }
  Effect effect() const override { return stateful_ ? Effect::kBarrier : Effect::kNone; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return out_specs_;
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>& out, const GraphOpContext&) override {
    TROUPE_ASSIGN_OR_RETURN(bool pred, ScalarBool(in[0], name_ + " predicate"));
    TROUPE_ASSIGN_OR_RETURN(out, (pred ? then_ : else_).Run(in.subspan(1)));
    return Status::OK();
  }
  std::vector<Value> RunEager(const std::vector<Value>& inputs) override {
    Result<bool> pred = ScalarBool(inputs[0].eager_tensor(), name_ + " predicate");
    if (!pred.ok()) return {Value::Error(pred.status())};
    Result<std::vector<Value>> out =
        InlineGraph(*(*pred ? then_ : else_).graph(), {inputs.begin() + 1, inputs.end()});
    if (!out.ok()) return {Value::Error(out.status())};
    return *out;
  }
  bool differentiable() const override { return true; }
  Status Gradient(const OpCall& call, const std::vector<Value>& dys,
                  std::vector<Value>* dxs) const override;

 private:
  LazyExecutor then_;
  LazyExecutor else_;
  std::vector<TensorSpec> out_specs_;
  std::string name_;
  bool stateful_;
};

// The gradient of a subgraph as a subgraph: inputs (xs..., dys...), outputs d/dx for the
// floating-point xs in `diff` (zeros where unconnected). Recomputes the forward inside.
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

Status IfOp::Gradient(const OpCall& call, const std::vector<Value>& dys,
                      std::vector<Value>* dxs) const {
  std::vector<Value> xs(call.inputs.begin() + 1, call.inputs.end());
  std::vector<int> diff_x, diff_out;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (IsFloating(xs[i].dtype())) diff_x.push_back(static_cast<int>(i));
  }
  std::vector<Value> ds;
  for (size_t k = 0; k < call.outputs.size(); ++k) {
    if (!IsFloating(call.outputs[k].dtype())) continue;
    diff_out.push_back(static_cast<int>(k));
    ds.push_back(dys[k].defined() ? dys[k] : ops::ZerosLike(call.outputs[k]));
  }
  dxs->assign(call.inputs.size(), Value());
  if (diff_x.empty() || diff_out.empty()) return Status::OK();
  std::vector<TensorSpec> x_specs = SpecsOf(xs, "x");
  std::vector<TensorSpec> dy_specs = SpecsOf(ds, "dy");
  TROUPE_ASSIGN_OR_RETURN(auto tg, GradientSubgraph(name_ + "_true_grad", then_.graph(), x_specs,
                                                    dy_specs, diff_x, diff_out));
  TROUPE_ASSIGN_OR_RETURN(auto eg, GradientSubgraph(name_ + "_false_grad", else_.graph(), x_specs,
                                                    dy_specs, diff_x, diff_out));
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> extra,
                          UnifyCaptures({tg.get(), eg.get()}, x_specs.size() + dy_specs.size()));
  std::vector<TensorSpec> specs;
  for (int i : diff_x) specs.push_back(xs[static_cast<size_t>(i)].spec());
  auto op = std::make_shared<IfOp>(tg, eg, specs, name_ + "_grad");
  std::vector<Value> inputs = Concat(Concat(Concat({call.inputs[0]}, xs), ds), extra);
  std::vector<Value> grads = ApplyGraphOp(op, inputs, name_ + "_grad");
  TROUPE_RETURN_IF_ERROR(FirstError(grads));
  for (size_t j = 0; j < diff_x.size(); ++j) (*dxs)[static_cast<size_t>(diff_x[j]) + 1] = grads[j];
  return Status::OK();
}

// --------------------------------------------------------------------------------- While

using History = std::vector<std::vector<Tensor>>;  // loop variables entering each iteration

class WhileOp final : public GraphOp {
 public:
  WhileOp(std::shared_ptr<FuncGraph> cond, std::shared_ptr<FuncGraph> body, size_t num_vars,
          std::vector<TensorSpec> specs, int64_t max_iterations, std::string name)
      : cond_(cond),
        body_(body),
        num_vars_(num_vars),
        specs_(std::move(specs)),
        max_iterations_(max_iterations),
        name_(std::move(name)),
        stateful_(HasState(*cond) || HasState(*body)) {}

  std::string_view type() const override { return "While"; }
  Effect effect() const override { return stateful_ ? Effect::kBarrier : Effect::kNone; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return specs_;
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>& out,
             const GraphOpContext& ctx) override {
    std::vector<Tensor> vars(in.begin(), in.begin() + static_cast<long>(num_vars_));
    std::vector<Tensor> args(in.begin(), in.end());
    std::shared_ptr<History> history;
    if (record_history_.load() && ctx.run != nullptr) {
      history = std::make_shared<History>();
      ctx.run->Scratch(ctx.node) = history;
    }
    for (int64_t it = 0; max_iterations_ < 0 || it < max_iterations_; ++it) {
      TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> p, cond_.Run(args));
      TROUPE_ASSIGN_OR_RETURN(bool go, ScalarBool(p[0], name_ + " condition"));
      if (!go) break;
      if (history) history->push_back(vars);
      TROUPE_ASSIGN_OR_RETURN(vars, body_.Run(args));
      for (size_t i = 0; i < num_vars_; ++i) {
        if (!specs_[i].IsCompatibleWith(vars[i])) {
          return InvalidArgumentError(name_ + ": loop variable " + std::to_string(i) + " became " +
                                      TensorSpec::From(vars[i]).ToString() + ", expected " +
                                      specs_[i].ToString());
        }
        args[i] = vars[i];
      }
    }
    out = std::move(vars);
    return Status::OK();
  }
  std::vector<Value> RunEager(const std::vector<Value>& inputs) override {
    std::vector<Value> args = inputs;
    for (int64_t it = 0; max_iterations_ < 0 || it < max_iterations_; ++it) {
      Result<std::vector<Value>> p = InlineGraph(*cond_.graph(), args);
      if (!p.ok()) return {Value::Error(p.status())};
      Result<bool> go = ScalarBool((*p)[0].eager_tensor(), name_ + " condition");
      if (!go.ok()) return {Value::Error(go.status())};
      if (!*go) break;
      Result<std::vector<Value>> next = InlineGraph(*body_.graph(), args);
      if (!next.ok()) return {Value::Error(next.status())};
      for (size_t i = 0; i < num_vars_; ++i) args[i] = (*next)[i];
    }
    args.resize(num_vars_);
    return args;
  }
  bool differentiable() const override { return true; }
  Status Gradient(const OpCall& call, const std::vector<Value>& dys,
                  std::vector<Value>* dxs) const override;

 private:
  LazyExecutor cond_;
  LazyExecutor body_;
  size_t num_vars_;
  std::vector<TensorSpec> specs_;
  int64_t max_iterations_;
  std::string name_;
  bool stateful_;
  mutable std::atomic<bool> record_history_{false};
};

// Runs the body's gradient backwards over the iterations its While node recorded.
class WhileGradOp final : public GraphOp {
 public:
  WhileGradOp(std::shared_ptr<FuncGraph> body_grad, int forward_node, size_t num_vars,
              size_t num_dvars, size_t num_caps, std::vector<int> diff_caps,
              std::vector<TensorSpec> specs, std::string name)
      : body_grad_(std::move(body_grad)),
        forward_node_(forward_node),
        num_vars_(num_vars),
        num_dvars_(num_dvars),
        num_caps_(num_caps),
        diff_caps_(std::move(diff_caps)),
        specs_(std::move(specs)),
        name_(std::move(name)) {}

  std::string_view type() const override { return "WhileGrad"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return specs_;
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>& out,
             const GraphOpContext& ctx) override {
    std::shared_ptr<History> history;
    if (ctx.run != nullptr) {
      history = std::static_pointer_cast<History>(ctx.run->Scratch(forward_node_));
    }
    if (!history) {
      return FailedPreconditionError(name_ +
                                     ": the forward While loop recorded no iterations "
                                     "(its gradient must run in the same graph execution)");
    }
    std::vector<Tensor> dy(in.begin(), in.begin() + static_cast<long>(num_dvars_));
    std::vector<Tensor> caps(in.begin() + static_cast<long>(num_dvars_),
                             in.begin() + static_cast<long>(num_dvars_ + num_caps_));
    std::vector<Tensor> extra(in.begin() + static_cast<long>(num_dvars_ + num_caps_), in.end());
    std::vector<Tensor> dcaps(diff_caps_.size());
    for (size_t it = history->size(); it-- > 0;) {
      std::vector<Tensor> args = (*history)[it];
      args.insert(args.end(), caps.begin(), caps.end());
      args.insert(args.end(), dy.begin(), dy.end());
      args.insert(args.end(), extra.begin(), extra.end());
      TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> r, body_grad_.Run(args));
      for (size_t i = 0; i < num_dvars_; ++i) dy[i] = r[i];
      for (size_t j = 0; j < diff_caps_.size(); ++j) {
        const Tensor& g = r[num_dvars_ + j];
        if (!dcaps[j].initialized()) {
          dcaps[j] = g;
        } else {
          Tensor pair[2] = {dcaps[j], g};
          TROUPE_ASSIGN_OR_RETURN(dcaps[j], RunOp1("AddV2", pair));
        }
      }
    }
    for (size_t j = 0; j < diff_caps_.size(); ++j) {
      if (!dcaps[j].initialized()) {
        Tensor c[1] = {caps[static_cast<size_t>(diff_caps_[j])]};
        TROUPE_ASSIGN_OR_RETURN(dcaps[j], RunOp1("ZerosLike", c));
      }
    }
    out = std::move(dy);
    out.insert(out.end(), dcaps.begin(), dcaps.end());
    return Status::OK();
  }

 private:
  LazyExecutor body_grad_;
  int forward_node_;
  size_t num_vars_;
  size_t num_dvars_;
  size_t num_caps_;
  std::vector<int> diff_caps_;
  std::vector<TensorSpec> specs_;
  std::string name_;
};

Status WhileOp::Gradient(const OpCall& call, const std::vector<Value>& dys,
                         std::vector<Value>* dxs) const {
  dxs->assign(call.inputs.size(), Value());
  const Value& out0 = call.outputs.empty() ? Value() : call.outputs[0];
  if (!out0.symbolic() || out0.graph() != CurrentGraph()) {
    return UnimplementedError(name_ +
                              ": the gradient of a While loop must be built in the "
                              "graph that holds the loop");
  }
  const int forward_node = out0.node_out().node;
  std::vector<Value> vars(call.inputs.begin(), call.inputs.begin() + static_cast<long>(num_vars_));
  std::vector<Value> caps(call.inputs.begin() + static_cast<long>(num_vars_), call.inputs.end());
  std::vector<int> diff_vars, diff_caps;
  for (size_t i = 0; i < num_vars_; ++i) {
    if (IsFloating(specs_[i].dtype)) diff_vars.push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < caps.size(); ++i) {
    if (IsFloating(caps[i].dtype())) diff_caps.push_back(static_cast<int>(i));
  }
  if (diff_vars.empty()) return Status::OK();
  std::vector<Value> ds;
  for (int i : diff_vars) {
    const size_t k = static_cast<size_t>(i);
    ds.push_back(dys[k].defined() ? dys[k] : ops::ZerosLike(call.outputs[k]));
  }
  // Body gradient: (vars, caps, dys) -> (d vars, d caps).
  std::vector<TensorSpec> x_specs = specs_;
  for (size_t i = 0; i < x_specs.size(); ++i) x_specs[i].name = "x" + std::to_string(i);
  std::vector<TensorSpec> cap_specs = SpecsOf(caps, "c");
  x_specs.insert(x_specs.end(), cap_specs.begin(), cap_specs.end());
  std::vector<int> diff_x = diff_vars;
  for (int c : diff_caps) diff_x.push_back(static_cast<int>(num_vars_) + c);
  TROUPE_ASSIGN_OR_RETURN(auto bg, GradientSubgraph(name_ + "_body_grad", body_.graph(), x_specs,
                                                    SpecsOf(ds, "dy"), diff_x, diff_vars));
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> extra,
                          UnifyCaptures({bg.get()}, x_specs.size() + ds.size()));
  std::vector<TensorSpec> out_specs;
  for (int i : diff_vars) out_specs.push_back(specs_[static_cast<size_t>(i)]);
  for (int c : diff_caps) out_specs.push_back(caps[static_cast<size_t>(c)].spec());
  record_history_.store(true);
  auto op = std::make_shared<WhileGradOp>(bg, forward_node, num_vars_, diff_vars.size(),
                                          caps.size(), diff_caps, out_specs, name_ + "_grad");
  std::vector<Value> grads = ApplyGraphOp(op, Concat(Concat(ds, caps), extra), name_ + "_grad");
  TROUPE_RETURN_IF_ERROR(FirstError(grads));
  if (!grads.empty()) CurrentGraph()->AddControlInput(grads[0].node_out().node, forward_node);
  for (size_t j = 0; j < diff_vars.size(); ++j)
    (*dxs)[static_cast<size_t>(diff_vars[j])] = grads[j];
  for (size_t j = 0; j < diff_caps.size(); ++j) {
    (*dxs)[num_vars_ + static_cast<size_t>(diff_caps[j])] = grads[diff_vars.size() + j];
  }
  return Status::OK();
}

Status RecordAndReturn(const Status& s) {
  if (!s.ok()) {
    if (FuncGraph* g = CurrentGraph()) g->RecordError(s);
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------- public API

Result<std::vector<Value>> Cond(const Value& pred, const BranchFn& true_fn,
                                const BranchFn& false_fn, const std::string& name) {
  if (!pred.ok()) return pred.status();
  if (CurrentGraph() == nullptr) {
    TROUPE_ASSIGN_OR_RETURN(Tensor p, pred.tensor());
    TROUPE_ASSIGN_OR_RETURN(bool take, ScalarBool(p, name + " predicate"));
    Outputs out = take ? true_fn() : false_fn();
    TROUPE_RETURN_IF_ERROR(out.status());
    TROUPE_RETURN_IF_ERROR(FirstError(out.values()));
    return out.values();
  }
  TROUPE_RETURN_IF_ERROR(RecordAndReturn(CheckPredSpec(pred, name)));
  auto wrap = [](const BranchFn& fn) { return [&fn](const std::vector<Value>&) { return fn(); }; };
  auto tg = TraceSubgraph(name + "_true", {}, wrap(true_fn));
  if (!tg.ok()) return RecordAndReturn(tg.status().WithContext(name + " true branch"));
  auto fg = TraceSubgraph(name + "_false", {}, wrap(false_fn));
  if (!fg.ok()) return RecordAndReturn(fg.status().WithContext(name + " false branch"));
  std::vector<TensorSpec> ts = (*tg)->OutputSpecs(), fs = (*fg)->OutputSpecs();
  if (ts.size() != fs.size()) {
    return RecordAndReturn(
        InvalidArgumentError(name + ": true_fn returns " + std::to_string(ts.size()) +
                             " outputs but false_fn returns " + std::to_string(fs.size())));
  }
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].dtype != fs[i].dtype || !ts[i].shape.IsCompatibleWith(fs[i].shape)) {
      return RecordAndReturn(InvalidArgumentError(
          name + ": output " + std::to_string(i) + " of true_fn is " +
          TensorSpec{ts[i].shape, ts[i].dtype, ""}.ToString() + " but output " + std::to_string(i) +
          " of false_fn is " + TensorSpec{fs[i].shape, fs[i].dtype, ""}.ToString() +
          "; both branches must return the same dtypes and compatible shapes"));
    }
    specs.push_back({ts[i].shape.MostSpecificCommonShape(fs[i].shape), ts[i].dtype, ""});
  }
  auto extra = UnifyCaptures({tg->get(), fg->get()}, 0);
  if (!extra.ok()) return RecordAndReturn(extra.status());
  auto op = std::make_shared<IfOp>(*tg, *fg, specs, name);
  std::vector<Value> out = ApplyGraphOp(op, Concat({pred}, *extra), name);
  TROUPE_RETURN_IF_ERROR(FirstError(out));
  return out;
}

Result<std::vector<Value>> WhileLoop(const LoopCondFn& cond, const LoopBodyFn& body,
                                     const std::vector<Value>& loop_vars,
                                     const WhileOptions& options) {
  const std::string& name = options.name;
  TROUPE_RETURN_IF_ERROR(FirstError(loop_vars));
  if (CurrentGraph() == nullptr) {
    std::vector<Value> vars = loop_vars;
    for (int64_t it = 0; options.maximum_iterations < 0 || it < options.maximum_iterations; ++it) {
      Value p = cond(vars);
      TROUPE_ASSIGN_OR_RETURN(Tensor pt, p.tensor());
      TROUPE_ASSIGN_OR_RETURN(bool go, ScalarBool(pt, name + " condition"));
      if (!go) break;
      Outputs next = body(vars);
      TROUPE_RETURN_IF_ERROR(next.status());
      TROUPE_RETURN_IF_ERROR(FirstError(next.values()));
      if (next.values().size() != vars.size()) {
        return InvalidArgumentError(name + ": body returned " +
                                    std::to_string(next.values().size()) + " values for " +
                                    std::to_string(vars.size()) + " loop variables");
      }
      vars = next.values();
    }
    return vars;
  }
  std::vector<TensorSpec> specs = SpecsOf(loop_vars, "loop_var_");
  for (size_t i = 0; i < specs.size() && i < options.shape_invariants.size(); ++i) {
    if (!options.shape_invariants[i].IsCompatibleWith(specs[i].shape)) {
      return RecordAndReturn(InvalidArgumentError(
          name + ": shape invariant " + options.shape_invariants[i].ToString() +
          " does not fit loop variable " + std::to_string(i) + " " + specs[i].ToString()));
    }
    specs[i].shape = options.shape_invariants[i];
  }
  auto cg = TraceSubgraph(name + "_cond", specs,
                          [&](const std::vector<Value>& in) -> Outputs { return cond(in); });
  if (!cg.ok()) return RecordAndReturn(cg.status().WithContext(name + " condition"));
  if ((*cg)->outputs.size() != 1) {
    return RecordAndReturn(InvalidArgumentError(name + ": the condition must return one value"));
  }
  TensorSpec ps = (*cg)->spec((*cg)->outputs[0]);
  if (ps.dtype != DType::kBool || (!ps.shape.unknown_rank() && ps.shape.rank() != 0)) {
    return RecordAndReturn(InvalidArgumentError(
        name + ": the condition must return a bool scalar, got " + ps.ToString()));
  }
  auto bg = TraceSubgraph(name + "_body", specs,
                          [&](const std::vector<Value>& in) -> Outputs { return body(in); });
  if (!bg.ok()) return RecordAndReturn(bg.status().WithContext(name + " body"));
  std::vector<TensorSpec> outs = (*bg)->OutputSpecs();
  if (outs.size() != specs.size()) {
    return RecordAndReturn(InvalidArgumentError(name + ": body returned " +
                                                std::to_string(outs.size()) + " values for " +
                                                std::to_string(specs.size()) + " loop variables"));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (outs[i].dtype != specs[i].dtype || !IsCompatibleSubshape(outs[i].shape, specs[i].shape)) {
      return RecordAndReturn(InvalidArgumentError(
          name + ": loop variable " + std::to_string(i) + " enters the loop as " +
          TensorSpec{specs[i].shape, specs[i].dtype, ""}.ToString() + " but the body returns " +
          TensorSpec{outs[i].shape, outs[i].dtype, ""}.ToString() +
          "; to let its shape change across iterations pass a shape invariant with unknown "
          "dims (WhileOptions::shape_invariants)"));
    }
  }
  auto extra = UnifyCaptures({cg->get(), bg->get()}, specs.size());
  if (!extra.ok()) return RecordAndReturn(extra.status());
  for (TensorSpec& s : specs) s.name.clear();
  auto op =
      std::make_shared<WhileOp>(*cg, *bg, specs.size(), specs, options.maximum_iterations, name);
  std::vector<Value> out = ApplyGraphOp(op, Concat(loop_vars, *extra), name);
  TROUPE_RETURN_IF_ERROR(FirstError(out));
  return out;
}

Result<std::vector<Value>> ForRange(const Value& start, const Value& limit, const ForBodyFn& body,
                                    const std::vector<Value>& loop_vars, const std::string& name) {
  std::vector<Value> vars = Concat({ops::Cast(start, DType::kInt32)}, loop_vars);
  Value lim = ops::Cast(limit, DType::kInt32);
  WhileOptions options;
  options.name = name;
  TROUPE_ASSIGN_OR_RETURN(
      std::vector<Value> out,
      WhileLoop([&](const std::vector<Value>& v) { return ops::Less(v[0], lim); },
                [&](const std::vector<Value>& v) -> Outputs {
                  Outputs next = body(v[0], {v.begin() + 1, v.end()});
                  if (!next.status().ok()) return next.status();
                  return Concat({v[0] + 1.0}, next.values());
                },
                vars, options));
  out.erase(out.begin());
  return out;
}

Result<std::vector<Value>> ForEachRow(const Value& x, const ForEachRowFn& body,
                                      const std::vector<Value>& loop_vars,
                                      const std::string& name) {
  return ForRange(
      ops::ScalarOf(0, DType::kInt32), ops::Dim(x, 0),
      [&](const Value& i, const std::vector<Value>& vars) { return body(ops::RowAt(x, i), vars); },
      loop_vars, name);
}

}  // namespace troupe
