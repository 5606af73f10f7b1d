// Internal to graph/: how tensor specs are printed and matched in signatures, trace lookups
// and value descriptions (Arg, ConcreteFunction, Function, Value), and the tensors of the
// values a function returns.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "core/tensor_shape.h"
#include "core/tensor_spec.h"
#include "graph/value.h"

namespace troupe::internal {

// TF prints shapes as Python tuples: "()", "(None,)", "(2, None)"; "<unknown>" without a rank.
std::string PyShape(const TensorShape& shape);
// "float32 Tensor, shape=(2, None)"
std::string TensorDesc(const TensorSpec& s);
// Every dim of `call` fits `traced` (unknown traced dims accept anything).
bool IsSubtype(const TensorSpec& call, const TensorSpec& traced);
// The concrete tensors of eager values (an error for a symbolic one).
Result<std::vector<Tensor>> TensorsOf(const std::vector<Value>& values);

}  // namespace troupe::internal
