// Cond: the If op (runs the branch its predicate picks), its gradient (an If over the branches'
// gradients) and the public entry point.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/control_flow.h"
#include "graph/control_flow_subgraph.h"
#include "graph/graph_op.h"
#include "graph/ops.h"

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

Status CheckPredSpec(const Value& pred, const std::string& name) {
  TensorSpec s = pred.spec();
  if (s.dtype != DType::kBool || (!s.shape.unknown_rank() && s.shape.rank() != 0)) {
    return InvalidArgumentError(name + ": the predicate must be a bool scalar, got " +
                                s.ToString());
  }
  return Status::OK();
}

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

}  // namespace

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

}  // namespace troupe
