// WhileLoop: the While op (iterates until its condition fails, recording the iterations when a
// gradient needs them), WhileGrad (runs the body's gradient backwards over them), and the public
// loops built on it (WhileLoop, ForRange, ForEachRow).
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/control_flow.h"
#include "graph/control_flow_subgraph.h"
#include "graph/executor.h"
#include "graph/graph_op.h"
#include "graph/ops.h"
#include "graph/row_ops.h"

namespace troupe {
namespace {

using control_flow_internal::Concat;
using control_flow_internal::GradientSubgraph;
using control_flow_internal::HasState;
using control_flow_internal::LazyExecutor;
using control_flow_internal::RecordAndReturn;
using control_flow_internal::ScalarBool;
using control_flow_internal::SpecsOf;
using control_flow_internal::TraceSubgraph;
using control_flow_internal::UnifyCaptures;

// `shape` fits `spec` (every known dim of spec is matched).
bool IsCompatibleSubshape(const TensorShape& shape, const TensorShape& spec) {
  if (spec.unknown_rank()) return true;
  if (shape.unknown_rank() || shape.rank() != spec.rank()) return false;
  for (int i = 0; i < spec.rank(); ++i) {
    if (spec.dim(i) >= 0 && shape.dim(i) != spec.dim(i)) return false;
  }
  return true;
}

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

}  // namespace

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
