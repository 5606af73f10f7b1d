// Graph IR: nodes are registered kernel ops (kernels/op_registry.h), placeholders with
// TensorSpecs, constants, or graph-level ops implemented in graph/ (variables, Print, control
// flow). Edges are typed (every node output has a TensorSpec, possibly with unknown dims) and
// nodes may carry control inputs. Nodes are appended in program order, so creation order is a
// topological order of data and control edges; the executor relies on that.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"
#include "kernels/attr.h"
#include "kernels/op_registry.h"

namespace troupe {

class GraphOp;

// One output of one node.
struct NodeOut {
  int node = -1;
  int index = 0;
  bool operator==(const NodeOut& o) const { return node == o.node && index == o.index; }
};

enum class NodeKind : uint8_t {
  kKernel,       // an op from the OpRegistry, run through its device kernel
  kPlaceholder,  // a function input
  kConst,        // a constant tensor
  kGraphOp,      // implemented in graph/ (see graph_op.h)
};

struct Node {
  int id = -1;
  std::string name;  // unique within the graph: "add", "add_1"
  std::string op;    // "AddV2", "Placeholder", "Const", "ReadVariableOp", "If", ...
  NodeKind kind = NodeKind::kKernel;
  const OpDef* def = nullptr;         // kKernel
  std::shared_ptr<GraphOp> graph_op;  // kGraphOp
  AttrMap attrs;
  std::vector<NodeOut> inputs;
  std::vector<int> control_inputs;
  std::vector<TensorSpec> outputs;  // one spec per output
  std::vector<int64_t> output_ids;  // value ids (tapes key gradients by them)
  Tensor value;                     // kConst
  bool stateful = false;            // never pruned; ordered by control inputs

  int num_outputs() const { return static_cast<int>(outputs.size()); }
};

// A fresh process-wide id for a value (eager tensor or node output).
int64_t NextValueId();

class Graph {
 public:
  explicit Graph(std::string name) : name_(std::move(name)) {}
  virtual ~Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const { return *nodes_[static_cast<size_t>(id)]; }
  Node& mutable_node(int id) { return *nodes_[static_cast<size_t>(id)]; }
  const TensorSpec& spec(NodeOut out) const { return node(out.node).outputs[out.index]; }
  // "add:0" as TF prints symbolic tensors.
  std::string OutputName(NodeOut out) const;

  // Adds a registered op: checks arity and infers output specs through the OpDef. Errors name
  // the node, the op and the input specs.
  Result<int> AddKernelNode(std::string_view op, std::vector<NodeOut> inputs, AttrMap attrs,
                            std::string_view name_hint = {});
  int AddPlaceholder(TensorSpec spec, std::string_view name);
  int AddConst(Tensor value, std::string_view name_hint = {});
  // Adds a graph-level op with the output specs its builder computed.
  int AddGraphOpNode(std::shared_ptr<GraphOp> op, std::vector<NodeOut> inputs,
                     std::vector<TensorSpec> output_specs, std::string_view name_hint = {});
  void AddControlInput(int node, int dep);

  // `base`, or `base_<k>` for the first unused k.
  std::string UniqueName(std::string_view base);

  // One line per node, TF's `node.input -> node.name` listing: "[] -> a", "[a, a] -> add".
  std::string DebugString() const;

 protected:
  int AppendNode(std::unique_ptr<Node> node);

 private:
  std::string name_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, int, std::less<>> name_counts_;
};

}  // namespace troupe
