// Internal to graph/function*.cc: how tensor specs are printed and matched in signatures and
// trace lookups, shared by Arg, ConcreteFunction and Function.
#pragma once

#include <string>

#include "core/tensor_shape.h"
#include "core/tensor_spec.h"

namespace troupe::internal {

// Python's spelling of a shape: "(2, None)", "(3,)", "<unknown>".
std::string PyShape(const TensorShape& shape);
// "float32 Tensor, shape=(2, None)"
std::string TensorDesc(const TensorSpec& s);
// Every dim of `call` fits `traced` (unknown traced dims accept anything).
bool IsSubtype(const TensorSpec& call, const TensorSpec& traced);

}  // namespace troupe::internal
