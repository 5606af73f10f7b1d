#include "graph/graph.h"

#include <atomic>

#include "graph/graph_op.h"

namespace troupe {

int64_t NextValueId() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

std::string Graph::OutputName(NodeOut out) const {
  return node(out.node).name + ":" + std::to_string(out.index);
}

std::string Graph::UniqueName(std::string_view base) {
  std::string b(base.empty() ? "node" : base);
  auto it = name_counts_.find(b);
  if (it == name_counts_.end()) {
    name_counts_.emplace(b, 1);
    return b;
  }
  // Skip suffixed names a user already took ("add_1" given explicitly).
  while (true) {
    std::string candidate = b + "_" + std::to_string(it->second++);
    if (!name_counts_.count(candidate)) {
      name_counts_.emplace(candidate, 1);
      return candidate;
    }
  }
}

int Graph::AppendNode(std::unique_ptr<Node> node) {
  node->id = num_nodes();
  node->output_ids.resize(node->outputs.size());
  for (auto& id : node->output_ids) id = NextValueId();
  nodes_.push_back(std::move(node));
  return nodes_.back()->id;
}

Result<int> Graph::AddKernelNode(std::string_view op, std::vector<NodeOut> inputs, AttrMap attrs,
                                 std::string_view name_hint) {
  TROUPE_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Global().LookupOp(op));
  std::string name = UniqueName(name_hint.empty() ? op : name_hint);
  if (def->num_inputs >= 0 && static_cast<int>(inputs.size()) != def->num_inputs) {
    return InvalidArgumentError("node '" + name + "' (" + std::string(op) + "): expects " +
                                std::to_string(def->num_inputs) + " inputs, got " +
                                std::to_string(inputs.size()));
  }
  std::vector<TensorSpec> in_specs;
  in_specs.reserve(inputs.size());
  for (NodeOut in : inputs) in_specs.push_back(spec(in));
  std::vector<TensorSpec> out_specs;
  if (def->infer_shapes) {
    auto inferred = def->infer_shapes(in_specs, attrs);
    if (!inferred.ok()) {
      std::string specs;
      for (size_t i = 0; i < in_specs.size(); ++i) {
        specs += (i ? ", " : "") + in_specs[i].ToString();
      }
      return Status(inferred.status().code(), "node '" + name + "' (" + std::string(op) +
                                                  "): " + inferred.status().message() +
                                                  " [inputs: " + specs + "]");
    }
    out_specs = std::move(*inferred);
  } else {
    // No shape function: outputs of unknown shape with the first input's dtype.
    for (int i = 0; i < def->num_outputs; ++i) {
      out_specs.push_back(TensorSpec{TensorShape::UnknownRank(),
                                     in_specs.empty() ? DType::kFloat32 : in_specs[0].dtype, ""});
    }
  }
  auto node = std::make_unique<Node>();
  node->name = std::move(name);
  node->op = std::string(op);
  node->kind = NodeKind::kKernel;
  node->def = def;
  node->attrs = std::move(attrs);
  node->inputs = std::move(inputs);
  node->outputs = std::move(out_specs);
  node->stateful = def->stateful;
  return AppendNode(std::move(node));
}

int Graph::AddPlaceholder(TensorSpec spec, std::string_view name) {
  auto node = std::make_unique<Node>();
  node->name = UniqueName(name.empty() ? "input" : name);
  node->op = "Placeholder";
  node->kind = NodeKind::kPlaceholder;
  spec.name = node->name;
  node->outputs.push_back(std::move(spec));
  return AppendNode(std::move(node));
}

int Graph::AddConst(Tensor value, std::string_view name_hint) {
  auto node = std::make_unique<Node>();
  node->name = UniqueName(name_hint.empty() ? "Const" : name_hint);
  node->op = "Const";
  node->kind = NodeKind::kConst;
  node->outputs.push_back(TensorSpec::From(value));
  node->value = std::move(value);
  return AppendNode(std::move(node));
}

int Graph::AddGraphOpNode(std::shared_ptr<GraphOp> op, std::vector<NodeOut> inputs,
                          std::vector<TensorSpec> output_specs, std::string_view name_hint) {
  auto node = std::make_unique<Node>();
  node->name = UniqueName(name_hint.empty() ? op->type() : name_hint);
  node->op = std::string(op->type());
  node->kind = NodeKind::kGraphOp;
  node->stateful = op->stateful();
  node->graph_op = std::move(op);
  node->inputs = std::move(inputs);
  node->outputs = std::move(output_specs);
  return AppendNode(std::move(node));
}

void Graph::AddControlInput(int node_id, int dep) {
  auto& deps = mutable_node(node_id).control_inputs;
  for (int d : deps) {
    if (d == dep) return;
  }
  deps.push_back(dep);
}

std::string Graph::DebugString() const {
  std::string out;
  for (const auto& n : nodes_) {
    out += "[";
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (i) out += ", ";
      const Node& src = node(n->inputs[i].node);
      out += src.name;
      if (n->inputs[i].index) out += ":" + std::to_string(n->inputs[i].index);
    }
    for (int dep : n->control_inputs) {
      out += (n->inputs.empty() && &dep == n->control_inputs.data() ? "^" : ", ^") + node(dep).name;
    }
    out += "] -> " + n->name + "\n";
  }
  return out;
}

}  // namespace troupe
