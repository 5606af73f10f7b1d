// Internal to graph/control_flow_*.cc, not a public interface: what Cond and WhileLoop share
// (tracing branches and loop bodies into nested subgraphs, their gradients as subgraphs, running
// them lazily, and small helpers).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/status.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"
#include "graph/executor.h"
#include "graph/func_graph.h"
#include "graph/function.h"
#include "graph/value.h"

namespace troupe::control_flow_internal {

using SubgraphFn = std::function<Outputs(const std::vector<Value>& inputs)>;

// Traces `fn` into a new graph nested in the current one, with placeholders for `specs`.
Result<std::shared_ptr<FuncGraph>> TraceSubgraph(const std::string& name,
                                                 const std::vector<TensorSpec>& specs,
                                                 const SubgraphFn& fn);

// Gives every graph the same trailing inputs: the union of what any of them captured from the
// enclosing graph. Returns those enclosing values (the op's extra inputs) and finishes the
// graphs.
Result<std::vector<Value>> UnifyCaptures(const std::vector<FuncGraph*>& graphs,
                                         size_t num_declared);

// The gradient of a subgraph as a subgraph: inputs (xs..., dys...), outputs d/dx for the
// floating-point xs in `diff` (zeros where unconnected). Recomputes the forward inside.
Result<std::shared_ptr<FuncGraph>> GradientSubgraph(const std::string& name,
                                                    const std::shared_ptr<FuncGraph>& fwd,
                                                    const std::vector<TensorSpec>& x_specs,
                                                    const std::vector<TensorSpec>& dy_specs,
                                                    const std::vector<int>& diff_x,
                                                    const std::vector<int>& diff_out);

// Any node of `g` is stateful (then the If/While node is an ordering barrier).
bool HasState(const FuncGraph& g);

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

// The value of a bool scalar; `what` names it in the error otherwise.
Result<bool> ScalarBool(const Tensor& t, const std::string& what);

// `a` followed by `b`.
std::vector<Value> Concat(std::vector<Value> a, const std::vector<Value>& b);

// The specs of `vs`, named prefix0, prefix1, ...
std::vector<TensorSpec> SpecsOf(const std::vector<Value>& vs, const std::string& prefix);

// Records a failed `s` in the graph being built (if any) and returns it.
Status RecordAndReturn(const Status& s);

}  // namespace troupe::control_flow_internal
