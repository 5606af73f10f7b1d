// FuncGraph: a Graph being built by a trace (or built by one): its input placeholders, its
// outputs, values it captured from enclosing graphs (cond branches and loop bodies capture
// tensors of the graph around them), the first error seen while building, and the bookkeeping
// for automatic control dependencies (reads after writes of a variable, side effects in
// program order).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_op.h"
#include "graph/value.h"

namespace troupe {

struct Capture {
  Value outer;      // the value in the enclosing graph (or an eager tensor)
  int placeholder;  // its placeholder node here
};

class FuncGraph : public Graph, public std::enable_shared_from_this<FuncGraph> {
 public:
  // `outer`: the enclosing graph whose values may be captured (branch and body graphs); null
  // for a function's own graph, which only captures eager tensors (as constants).
  explicit FuncGraph(std::string name, std::shared_ptr<FuncGraph> outer = nullptr)
      : Graph(std::move(name)), outer_(std::move(outer)) {}

  FuncGraph* outer() const { return outer_.get(); }

  // Declared inputs first, then one placeholder per capture.
  std::vector<int> inputs;
  std::vector<NodeOut> outputs;
  std::vector<TensorSpec> InputSpecs() const;
  std::vector<TensorSpec> OutputSpecs() const;
  const std::vector<Capture>& captures() const { return captures_; }

  bool building() const { return building_; }
  // Ends construction and drops the links to enclosing graphs (which hold this graph through
  // their control-flow nodes, so keeping them would form reference cycles).
  void FinishBuilding() {
    building_ = false;
    outer_.reset();
    for (Capture& c : captures_) c.outer = Value();
  }
  const Status& status() const { return status_; }
  void RecordError(const Status& s) {
    if (status_.ok() && !s.ok()) status_ = s;
  }

  // The node output that stands for `v` here: v itself when it belongs to this graph, a
  // capture placeholder for a value of an enclosing graph, a Const for an eager tensor.
  // Symbolic values of any other graph are an error (a tensor leaked out of its trace).
  Result<NodeOut> Resolve(const Value& v);
  // A placeholder for a new declared input.
  Value AddInput(const TensorSpec& spec, std::string_view name);

  // Adds control inputs to a freshly added stateful node according to its effect.
  void OrderStateful(int node, GraphOp::Effect effect, int64_t resource);

 private:
  struct ResourceAccess {
    int last_write = -1;
    std::vector<int> reads;
  };
  std::shared_ptr<FuncGraph> outer_;
  std::vector<Capture> captures_;
  std::unordered_map<int64_t, NodeOut> resolved_;  // value id -> capture/const here
  bool building_ = true;
  Status status_;
  int last_side_effect_ = -1;
  int last_barrier_ = -1;  // the last stateful control-flow node
  std::unordered_map<int64_t, ResourceAccess> resources_;
};

// Replays `graph` node by node with `inputs` for its input placeholders, in the current
// context: into the graph being built (inlining a nested function), or eagerly (so that tapes
// record every op). Returns the values of graph.outputs.
Result<std::vector<Value>> InlineGraph(const FuncGraph& graph, const std::vector<Value>& inputs);

}  // namespace troupe
