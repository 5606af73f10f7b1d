#include "graph/kernel_check.h"

#include <set>
#include <string>

#include "kernels/op_registry.h"

namespace troupe {

Status CheckKernelsExist(const FuncGraph& graph, const std::vector<char>& keep, Device device) {
  const OpRegistry& registry = OpRegistry::Global();
  std::set<std::string> seen;
  std::string missing;
  int count = 0;
  for (int i = 0; i < graph.num_nodes(); ++i) {
    const Node& node = graph.node(i);
    if (!keep[static_cast<size_t>(i)] || node.kind != NodeKind::kKernel) continue;
    if (seen.count(node.op) != 0 || registry.LookupKernel(node.op, device.type).ok()) continue;
    seen.insert(node.op);
    missing +=
        std::string(count++ == 0 ? "" : ", ") + "'" + node.op + "' (node '" + node.name + "')";
  }
  if (count == 0) return Status::OK();
  return NotFoundError("graph '" + graph.name() + "' on " + device.ToString() + ": no " +
                       (device.is_cpu() ? "CPU" : "GPU") + " kernel for " +
                       (count == 1 ? "op " : std::to_string(count) + " ops: ") + missing +
                       "; kernels/OPS.md lists the ops each device runs");
}

}  // namespace troupe
