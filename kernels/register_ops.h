// Internal: the registration functions of every op family. OpRegistry::Global() calls
// RegisterBuiltinOps once; add a new family's function to register_ops.cc.
#pragma once

namespace troupe {

class OpRegistry;

void RegisterBuiltinOps(OpRegistry& registry);

void RegisterArrayOps(OpRegistry& registry);  // Identity, ...

}  // namespace troupe
