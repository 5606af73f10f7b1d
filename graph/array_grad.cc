// Gradients of shape and array ops.
#include <algorithm>

#include "graph/grad_util.h"
#include "graph/gradients.h"
#include "graph/ops.h"

namespace troupe::internal {
namespace {

using V = std::vector<Value>;

// dy reshaped to x's (static) shape; one unknown dim is allowed (it becomes -1).
Value ReshapeLike(const Value& dy, const Value& x) {
  const TensorShape& s = x.shape();
  if (s.unknown_rank()) {
    return Value::Error(UnimplementedError("gradient of a reshape whose input has unknown rank"));
  }
  int unknown = 0;
  for (int64_t d : s.dims()) unknown += d < 0;
  if (unknown > 1) {
    return Value::Error(UnimplementedError("gradient of a reshape whose input " + s.ToString() +
                                           " has more than one unknown dimension"));
  }
  if (dy.ok() && dy.shape() == s) return dy;
  return ops::Reshape(dy, s.dims());
}

Status NoGradient(const OpCall& c, const V&, V* dx) {
  dx->assign(c.inputs.size(), Value());
  return Status::OK();
}

}  // namespace

void RegisterArrayGradients() {
  RegisterGradient("Identity", [](const OpCall&, const V& dy, V* dx) {
    *dx = {dy[0]};
    return Status::OK();
  });
  RegisterGradient("AddN", [](const OpCall& c, const V& dy, V* dx) {
    dx->assign(c.inputs.size(), dy[0]);
    return Status::OK();
  });
  for (const char* op : {"Reshape", "ExpandDims", "Squeeze"}) {
    RegisterGradient(op, [](const OpCall& c, const V& dy, V* dx) {
      *dx = {ReshapeLike(dy[0], c.inputs[0])};
      return Status::OK();
    });
  }
  RegisterGradient("Transpose", [](const OpCall& c, const V& dy, V* dx) {
    std::vector<int64_t> perm = c.attrs.GetInts("perm").value_or({});
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    *dx = {ops::Transpose(dy[0], inverse)};
    return Status::OK();
  });
  RegisterGradient("Cast", [](const OpCall& c, const V& dy, V* dx) {
    const DType src = c.inputs[0].dtype();
    if (IsFloating(src) && IsFloating(dy[0].dtype())) {
      *dx = {ops::Cast(dy[0], src)};
    } else {
      *dx = {Value()};
    }
    return Status::OK();
  });
  // Outputs that depend on the input's shape only: no gradient (TF returns None).
  for (const char* op : {"ZerosLike", "OnesLike", "Shape", "Fill"})
    RegisterGradient(op, NoGradient);
  RegisterGradient("SumToShapeOf", [](const OpCall& c, const V& dy, V* dx) {
    // The transpose of summing: broadcast back to the gradient input's shape.
    *dx = {ops::Mul(dy[0], ops::OnesLike(c.inputs[0])), Value()};
    return Status::OK();
  });
  RegisterGradient("SelectV2", [](const OpCall& c, const V& dy, V* dx) {
    const Value& cond = c.inputs[0];
    Value zeros = ops::ZerosLike(dy[0]);
    *dx = {Value(), grad::ReduceLike(ops::Select(cond, dy[0], zeros), c.inputs[1]),
           grad::ReduceLike(ops::Select(cond, zeros, dy[0]), c.inputs[2])};
    return Status::OK();
  });
}

}  // namespace troupe::internal
