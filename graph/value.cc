#include "graph/value.h"

#include "graph/func_graph.h"
#include "graph/function_internal.h"
#include "graph/graph_op.h"
#include "graph/precision.h"
#include "graph/tape.h"
#include "graph/variable.h"

namespace troupe {
namespace {

thread_local std::vector<std::shared_ptr<FuncGraph>> g_graph_stack;

const TensorShape& EmptyShape() {
  static const TensorShape* shape = new TensorShape();
  return *shape;
}

// As many error values as `op` has outputs, so callers may index any output.
std::vector<Value> ErrorValues(std::string_view op, const Status& s) {
  Result<const OpDef*> def = OpRegistry::Global().LookupOp(op);
  int n = def.ok() ? (*def)->num_outputs : 1;
  return std::vector<Value>(static_cast<size_t>(n < 1 ? 1 : n), Value::Error(s));
}

Status LeakError(const Value& v, std::string_view where) {
  return InvalidArgumentError(
      "symbolic tensor '" + v.graph()->OutputName(v.node_out()) + "' of graph '" +
      v.graph()->name() + "' used " + std::string(where) +
      "; a tensor cannot leave the trace that made it (return it from the function instead)");
}

}  // namespace

Value::Value(Tensor tensor) : tensor_(std::move(tensor)), id_(NextValueId()) {
  if (!tensor_.initialized()) {
    status_ = InvalidArgumentError("Value made from an uninitialized Tensor");
  }
}

Value Value::Error(Status status) {
  Value v;
  v.status_ = status.ok() ? InternalError("Value::Error with an OK status") : std::move(status);
  return v;
}

Value Value::Symbolic(std::shared_ptr<FuncGraph> graph, NodeOut out) {
  Value v;
  v.id_ = graph->node(out.node).output_ids[out.index];
  v.out_ = out;
  v.graph_ = std::move(graph);
  return v;
}

DType Value::dtype() const {
  if (graph_) return graph_->spec(out_).dtype;
  return tensor_.dtype();
}

const TensorShape& Value::shape() const {
  if (graph_) return graph_->spec(out_).shape;
  if (tensor_.initialized()) return tensor_.shape();
  return EmptyShape();
}

TensorSpec Value::spec() const {
  if (graph_) return graph_->spec(out_);
  return TensorSpec::From(tensor_);
}

Result<Tensor> Value::tensor() const {
  if (!status_.ok()) return status_;
  if (graph_) return LeakError(*this, "as a concrete tensor (it has no value outside the graph)");
  if (!tensor_.initialized()) return InvalidArgumentError("undefined Value has no tensor");
  return tensor_;
}

std::string Value::ToString() const {
  if (!status_.ok()) return "<error: " + status_.ToString() + ">";
  if (graph_) {
    const TensorSpec& s = graph_->spec(out_);
    std::string out = "Tensor(\"" + graph_->OutputName(out_) + "\"";
    if (!s.shape.unknown_rank()) out += ", shape=" + internal::PyShape(s.shape);
    return out + ", dtype=" + std::string(DTypeName(s.dtype)) + ")";
  }
  if (!tensor_.initialized()) return "<undefined>";
  return tensor_.DebugString();
}

std::string OpCall::Describe() const {
  if (node_name.empty()) return "eager op " + op;
  return "node '" + node_name + "' (" + op + ")";
}

FuncGraph* CurrentGraph() { return g_graph_stack.empty() ? nullptr : g_graph_stack.back().get(); }

const std::shared_ptr<FuncGraph>& CurrentGraphPtr() {
  static const std::shared_ptr<FuncGraph> none;
  return g_graph_stack.empty() ? none : g_graph_stack.back();
}

BuildScope::BuildScope(std::shared_ptr<FuncGraph> graph) {
  g_graph_stack.push_back(std::move(graph));
}
BuildScope::~BuildScope() { g_graph_stack.pop_back(); }

InitScope::InitScope() { g_graph_stack.push_back(nullptr); }
InitScope::~InitScope() { g_graph_stack.pop_back(); }

Status FirstError(const std::vector<Value>& values) {
  for (const Value& v : values) {
    if (!v.ok()) return v.status();
  }
  return Status::OK();
}

std::vector<Value> Apply(std::string_view op, const std::vector<Value>& inputs,
                         const AttrMap& attrs, std::string_view name) {
  DType compute = CurrentComputeDType();
  if (compute != DType::kFloat32) {
    return internal::ApplyWithPolicy(op, inputs, attrs, name, compute);
  }
  return internal::ApplyRaw(op, inputs, attrs, name);
}

std::vector<Value> internal::ApplyRaw(std::string_view op, const std::vector<Value>& inputs,
                                      const AttrMap& attrs, std::string_view name) {
  if (Status s = FirstError(inputs); !s.ok()) return ErrorValues(op, s);
  const std::shared_ptr<FuncGraph>& graph = CurrentGraphPtr();
  std::vector<Value> outputs;
  if (graph) {
    std::vector<NodeOut> ins;
    ins.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      Result<NodeOut> r = graph->Resolve(inputs[i]);
      if (!r.ok()) {
        Status s = r.status().WithContext(std::string(op) + " input " + std::to_string(i));
        graph->RecordError(s);
        return ErrorValues(op, s);
      }
      ins.push_back(*r);
    }
    Result<int> node = graph->AddKernelNode(op, std::move(ins), attrs, name);
    if (!node.ok()) {
      graph->RecordError(node.status());
      return ErrorValues(op, node.status());
    }
    const Node& n = graph->node(*node);
    if (n.stateful) graph->OrderStateful(*node, GraphOp::Effect::kSideEffect, 0);
    outputs.reserve(n.outputs.size());
    for (int i = 0; i < n.num_outputs(); ++i) outputs.push_back(Value::Symbolic(graph, {*node, i}));
  } else {
    std::vector<Tensor> tensors;
    tensors.reserve(inputs.size());
    for (const Value& v : inputs) {
      if (v.symbolic()) return ErrorValues(op, LeakError(v, "in eager op " + std::string(op)));
      if (!v.defined()) {
        return ErrorValues(op, InvalidArgumentError(std::string(op) + ": undefined input"));
      }
      tensors.push_back(v.eager_tensor());
    }
    Result<std::vector<Tensor>> r = RunOp(op, tensors, attrs);
    if (!r.ok()) return ErrorValues(op, r.status());
    outputs.reserve(r->size());
    for (Tensor& t : *r) outputs.emplace_back(std::move(t));
  }
  if (internal::ActiveTapeCount() > 0) {
    internal::RecordOnTapes(op, attrs, nullptr, inputs, outputs);
  }
  return outputs;
}

Value Apply1(std::string_view op, const std::vector<Value>& inputs, const AttrMap& attrs,
             std::string_view name) {
  std::vector<Value> out = Apply(op, inputs, attrs, name);
  if (out.empty()) return Value::Error(InternalError(std::string(op) + " produced no output"));
  return std::move(out[0]);
}

std::vector<Value> ApplyGraphOp(std::shared_ptr<GraphOp> op, const std::vector<Value>& inputs,
                                std::string_view name) {
  if (Status s = FirstError(inputs); !s.ok()) return {Value::Error(s)};
  const std::shared_ptr<FuncGraph>& graph = CurrentGraphPtr();
  std::vector<Value> outputs;
  if (graph) {
    std::vector<NodeOut> ins;
    std::vector<TensorSpec> specs;
    ins.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      Result<NodeOut> r = graph->Resolve(inputs[i]);
      if (!r.ok()) {
        Status s = r.status().WithContext(std::string(op->type()) + " input " + std::to_string(i));
        graph->RecordError(s);
        return {Value::Error(s)};
      }
      ins.push_back(*r);
      specs.push_back(graph->spec(*r));
    }
    std::string node_name = graph->UniqueName(name.empty() ? op->type() : name);
    Result<std::vector<TensorSpec>> out_specs = op->InferSpecs(specs);
    if (!out_specs.ok()) {
      Status s = out_specs.status().WithContext("node '" + node_name + "' (" +
                                                std::string(op->type()) + ")");
      graph->RecordError(s);
      return {Value::Error(s)};
    }
    GraphOp::Effect effect = op->effect();
    int64_t resource = op->resource_id();
    int id = graph->AddGraphOpNode(op, std::move(ins), std::move(*out_specs), node_name);
    if (effect != GraphOp::Effect::kNone) graph->OrderStateful(id, effect, resource);
    const Node& n = graph->node(id);
    for (int i = 0; i < n.num_outputs(); ++i) outputs.push_back(Value::Symbolic(graph, {id, i}));
  } else {
    for (const Value& v : inputs) {
      if (v.symbolic()) {
        return {Value::Error(LeakError(v, "in eager op " + std::string(op->type())))};
      }
    }
    outputs = op->RunEager(inputs);
    if (Status s = FirstError(outputs); !s.ok()) return outputs;
  }
  if (internal::ActiveTapeCount() > 0) {
    internal::RecordOnTapes(op->type(), AttrMap{}, op, inputs, outputs);
  }
  return outputs;
}

// GraphOp defaults live here, next to the dispatcher they serve.
std::vector<Value> GraphOp::RunEager(const std::vector<Value>& inputs) {
  std::vector<Tensor> tensors;
  tensors.reserve(inputs.size());
  std::vector<TensorSpec> specs;
  for (const Value& v : inputs) {
    if (!v.defined()) {
      return {Value::Error(InvalidArgumentError(std::string(type()) + ": undefined input"))};
    }
    tensors.push_back(v.eager_tensor());
    specs.push_back(TensorSpec::From(v.eager_tensor()));
  }
  // Shape checks are the same as while tracing.
  Result<std::vector<TensorSpec>> out_specs = InferSpecs(specs);
  if (!out_specs.ok()) {
    return {Value::Error(out_specs.status().WithContext(std::string(type())))};
  }
  std::vector<Tensor> outputs;
  Status s = Run(tensors, outputs, GraphOpContext{});
  if (!s.ok()) return {Value::Error(s)};
  std::vector<Value> out;
  out.reserve(outputs.size());
  for (Tensor& t : outputs) out.emplace_back(std::move(t));
  return out;
}

Status GraphOp::Gradient(const OpCall& call, const std::vector<Value>&, std::vector<Value>*) const {
  return InvalidArgumentError("no gradient for " + call.Describe() +
                              ": the op is not differentiable");
}

}  // namespace troupe
