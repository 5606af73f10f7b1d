// Value: the tensor handle user code builds with. Outside a trace it holds a concrete Tensor
// (eager mode: every op runs at once); while a Function is being traced it names a node output
// of the graph under construction (symbolic). The same C++ code therefore runs eagerly or
// builds a graph, as tf.function does with Python code.
//
// Errors are values: an op that fails returns a Value holding the Status; ops given an error
// input pass it on; a trace that saw any error fails with the first one. So builder code reads
// `y = MatMul(x, w) + b` and checks `y.ok()` (or lets the Function report it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"
#include "graph/graph.h"
#include "kernels/attr.h"

namespace troupe {

class FuncGraph;
class GraphOp;
class Variable;

class Value {
 public:
  Value() = default;                // undefined (for example an unconnected gradient)
  Value(Tensor tensor);             // NOLINT(runtime/explicit): an eager value
  Value(const Variable& variable);  // NOLINT(runtime/explicit): reads the variable
  static Value Error(Status status);
  static Value Symbolic(std::shared_ptr<FuncGraph> graph, NodeOut out);

  bool defined() const { return tensor_.initialized() || graph_ != nullptr || !status_.ok(); }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  bool symbolic() const { return graph_ != nullptr; }
  // Unique per eager tensor value / per node output; tapes key gradients by it.
  int64_t id() const { return id_; }

  DType dtype() const;
  const TensorShape& shape() const;
  TensorSpec spec() const;
  // The concrete tensor; an error for symbolic values (a tensor that leaked out of a trace)
  // and for error values.
  Result<Tensor> tensor() const;
  const Tensor& eager_tensor() const { return tensor_; }
  FuncGraph* graph() const { return graph_.get(); }
  const std::shared_ptr<FuncGraph>& graph_ptr() const { return graph_; }
  NodeOut node_out() const { return out_; }

  // Symbolic: `Tensor("a:0", shape=(), dtype=int32)` as TF prints it; eager: the tensor's
  // debug string.
  std::string ToString() const;

 private:
  Tensor tensor_;
  std::shared_ptr<FuncGraph> graph_;
  NodeOut out_;
  int64_t id_ = 0;
  Status status_;
};

// One op application, as a GradientTape records it and a gradient function sees it.
struct OpCall {
  std::string op;
  AttrMap attrs;
  std::shared_ptr<GraphOp> graph_op;  // graph-level ops
  std::string node_name;              // the graph node, empty in eager mode
  std::vector<Value> inputs;
  std::vector<Value> outputs;
  // The compute dtype (graph/precision.h) the op ran under; its gradient runs under it too.
  DType compute = DType::kFloat32;
  // "node 'add_1' (AddV2)" or "eager op AddV2".
  std::string Describe() const;
};

// The graph ops are added to right now; null in eager mode.
FuncGraph* CurrentGraph();
const std::shared_ptr<FuncGraph>& CurrentGraphPtr();

// RAII: ops go into `graph` until destruction.
class BuildScope {
 public:
  explicit BuildScope(std::shared_ptr<FuncGraph> graph);
  ~BuildScope();
  BuildScope(const BuildScope&) = delete;
  BuildScope& operator=(const BuildScope&) = delete;
};

// RAII: eager mode inside a trace (tf.init_scope): ops run at once, e.g. variable initializers.
class InitScope {
 public:
  InitScope();
  ~InitScope();
  InitScope(const InitScope&) = delete;
  InitScope& operator=(const InitScope&) = delete;
};

// Runs (eager) or records (tracing) the registered op `op`. `name` is the node name hint.
std::vector<Value> Apply(std::string_view op, const std::vector<Value>& inputs,
                         const AttrMap& attrs = {}, std::string_view name = {});
Value Apply1(std::string_view op, const std::vector<Value>& inputs, const AttrMap& attrs = {},
             std::string_view name = {});
// The same for a graph-level op.
std::vector<Value> ApplyGraphOp(std::shared_ptr<GraphOp> op, const std::vector<Value>& inputs,
                                std::string_view name = {});

// The first error among `values` (OK when none).
Status FirstError(const std::vector<Value>& values);

}  // namespace troupe
