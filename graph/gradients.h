// Gradient functions of registered ops, keyed by op name. A gradient function receives the
// recorded op application (inputs, outputs, attributes) and the gradients of its outputs
// (undefined Values stand for zero) and returns one gradient per input (undefined: none). It
// builds the gradient with ordinary ops, so it works eagerly and while tracing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "graph/value.h"

namespace troupe {

using GradFn = std::function<Status(const OpCall& call, const std::vector<Value>& dys,
                                    std::vector<Value>* dxs)>;

// Registers (or replaces) the gradient of `op`.
void RegisterGradient(const std::string& op, GradFn fn);
// Null when the op has no gradient.
const GradFn* LookupGradient(std::string_view op);

namespace internal {
// Gradient families, called once by the registry (explicit, not static initializers).
void RegisterMathGradients();
void RegisterNnGradients();
void RegisterArrayGradients();
}  // namespace internal

}  // namespace troupe
