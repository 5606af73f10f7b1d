// Helpers shared by the nn layer files (not a public interface).
#pragma once

#include <functional>
#include <string>

#include "graph/nn/initializers.h"
#include "graph/value.h"

namespace troupe::nn::internal {

// A variable initializer running `init` for `shape` (errors become error Values).
inline std::function<Value()> InitValue(const Initializer& init, const TensorShape& shape,
                                        DType dtype = DType::kFloat32) {
  return [init, shape, dtype]() -> Value {
    Result<Tensor> t = init(shape, dtype);
    if (!t.ok()) return Value::Error(t.status());
    return Value(*t);
  };
}

// `axis` in [-rank, rank) made non-negative; an InvalidArgument naming `what` otherwise.
inline Result<int64_t> NormalizeAxis(int64_t axis, int rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return InvalidArgumentError(what + ": axis " + std::to_string(axis) +
                                " is out of range for inputs of rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace troupe::nn::internal
