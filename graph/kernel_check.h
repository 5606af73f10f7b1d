// Before a graph runs on a device: every kernel node it will run must have a kernel there.
// One error lists every op type that has none (with a node that uses it), so a model that needs
// several missing GPU kernels says so at once, not one op per attempt.
#pragma once

#include <vector>

#include "core/device.h"
#include "core/status.h"
#include "graph/func_graph.h"

namespace troupe {

// `keep[i]` marks the nodes that will run (the executor's pruned set). NotFound naming the graph,
// the device and each op type without a kernel on it (the first node of each), in graph order.
Status CheckKernelsExist(const FuncGraph& graph, const std::vector<char>& keep, Device device);

}  // namespace troupe
