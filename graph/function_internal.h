// Internal to graph/: how tensor specs are printed and matched in signatures, trace lookups
// and value descriptions (Arg, ConcreteFunction, Function, Value).
#pragma once

#include <string>

#include "core/tensor_shape.h"
#include "core/tensor_spec.h"

namespace troupe::internal {

// TF prints shapes as Python tuples: "()", "(None,)", "(2, None)"; "<unknown>" without a rank.
std::string PyShape(const TensorShape& shape);
// "float32 Tensor, shape=(2, None)"
std::string TensorDesc(const TensorSpec& s);
// Every dim of `call` fits `traced` (unknown traced dims accept anything).
bool IsSubtype(const TensorSpec& call, const TensorSpec& traced);

}  // namespace troupe::internal
