// Helpers shared by the gradient functions (internal to graph/).
#pragma once

#include "graph/ops.h"
#include "graph/value.h"

namespace troupe::grad {

// `dy` summed down to `x`'s shape (undoing broadcasting); `dy` itself when both shapes are
// fully known and equal.
inline Value ReduceLike(const Value& dy, const Value& x) {
  if (dy.ok() && x.ok() && dy.shape().IsFullyDefined() && dy.shape() == x.shape()) return dy;
  return Apply1("SumToShapeOf", {dy, x}, {}, "SumToShapeOf");
}

// Zeros like `like` when `dy` is undefined (an output nobody differentiated).
inline Value OrZeros(const Value& dy, const Value& like) {
  return dy.defined() ? dy : ops::ZerosLike(like);
}

// `dy` (reduced over `axes` of x, or all axes when empty) broadcast back to x's shape.
Value BroadcastBack(const Value& dy, const Value& x, std::vector<int64_t> axes, bool keep_dims);

}  // namespace troupe::grad
