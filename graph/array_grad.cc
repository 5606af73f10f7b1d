// Gradients of shape and array ops.
#include <algorithm>

#include "graph/grad_util.h"
#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/precision.h"

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

// Static shape of `x` for a gradient that needs it (TF reads it at run time).
Result<std::vector<int64_t>> StaticShape(const Value& x, const std::string& op) {
  if (!x.shape().IsFullyDefined()) {
    return UnimplementedError("gradient of " + op + " needs the input's full shape, got " +
                              x.shape().ToString());
  }
  return std::vector<int64_t>(x.shape().dims());
}

}  // namespace

void RegisterArrayGradients() {
  RegisterGradient("Slice", [](const OpCall& c, const V& dy, V* dx) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> in, StaticShape(c.inputs[0], "Slice"));
    std::vector<int64_t> begin = c.attrs.GetInts("begin").value_or({});
    const TensorShape& out = c.outputs[0].shape();
    std::vector<int64_t> paddings;
    for (size_t i = 0; i < in.size(); ++i) {
      paddings.push_back(begin[i]);
      paddings.push_back(in[i] - begin[i] - out.dim(static_cast<int>(i)));
    }
    *dx = {ops::Pad(dy[0], paddings)};
    return Status::OK();
  });
  RegisterGradient("Pad", [](const OpCall& c, const V& dy, V* dx) {
    std::vector<int64_t> paddings = c.attrs.GetInts("paddings").value_or({});
    const TensorShape& in = c.inputs[0].shape();
    std::vector<int64_t> begin, size;
    for (int i = 0; i < in.rank(); ++i) {
      begin.push_back(paddings[static_cast<size_t>(2 * i)]);
      size.push_back(in.dim(i));
    }
    *dx = {ops::Slice(dy[0], begin, size)};
    return Status::OK();
  });
  RegisterGradient("StridedSlice", [](const OpCall& c, const V& dy, V* dx) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> in, StaticShape(c.inputs[0], "StridedSlice"));
    AttrMap attrs = c.attrs;
    attrs.Set("shape", in);
    *dx = {Apply1("StridedSliceGrad", {dy[0]}, attrs, "StridedSliceGrad")};
    return Status::OK();
  });
  RegisterGradient("ConcatV2", [](const OpCall& c, const V& dy, V* dx) {
    const int rank = c.outputs[0].shape().rank();
    int64_t axis = c.attrs.GetInt("axis").value_or(0);
    if (axis < 0) axis += rank;
    int64_t offset = 0;
    dx->clear();
    for (const Value& x : c.inputs) {
      std::vector<int64_t> begin(static_cast<size_t>(rank), 0), size(static_cast<size_t>(rank), -1);
      const int64_t n = x.shape().dim(static_cast<int>(axis));
      if (n < 0) return UnimplementedError("gradient of ConcatV2 needs known sizes on the axis");
      begin[static_cast<size_t>(axis)] = offset;
      size[static_cast<size_t>(axis)] = n;
      offset += n;
      dx->push_back(ops::Slice(dy[0], begin, size));
    }
    return Status::OK();
  });
  RegisterGradient("Pack", [](const OpCall& c, const V& dy, V* dx) {
    *dx = ops::Unstack(dy[0], c.attrs.GetInt("axis").value_or(0));
    return Status::OK();
  });
  RegisterGradient("Unpack", [](const OpCall& c, const V& dy, V* dx) {
    std::vector<Value> parts;
    for (size_t k = 0; k < c.outputs.size(); ++k)
      parts.push_back(grad::OrZeros(dy[k], c.outputs[k]));
    *dx = {ops::Stack(parts, c.attrs.GetInt("axis").value_or(0))};
    return Status::OK();
  });
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
  // Rounding to a low precision (graph/precision.h): the gradient is rounded the same way, as
  // the gradient of a Cast to bfloat16/float16 and back is a Cast of the gradient.
  RegisterGradient("RoundToPrecision", [](const OpCall& c, const V& dy, V* dx) {
    // RoundTo skips a gradient that is already rounded (the output of an op under the policy).
    Result<DType> dtype = c.attrs.GetDType("DstT");
    if (!dtype.ok()) return dtype.status();
    *dx = {dy[0].defined() ? RoundTo(dy[0], *dtype) : Value()};
    return Status::OK();
  });
  // Outputs that depend on the input's shape only, and StopGradient: no gradient (TF returns None).
  for (const char* op : {"ZerosLike", "OnesLike", "Shape", "Fill", "StopGradient"})
    RegisterGradient(op, NoGradient);
  RegisterGradient("SumToShapeOf", [](const OpCall& c, const V& dy, V* dx) {
    // The transpose of summing: broadcast back to the gradient input's shape.
    *dx = {ops::Mul(dy[0], ops::OnesLike(c.inputs[0])), Value()};
    return Status::OK();
  });
  RegisterGradient("BroadcastTo", [](const OpCall& c, const V& dy, V* dx) {
    *dx = {grad::ReduceLike(dy[0], c.inputs[0])};
    return Status::OK();
  });
  // TF's dense form of GatherV2's IndexedSlices gradient: the rows of dy summed into params'
  // rows by index (UnsortedSegmentSum, deterministic); indices get none.
  RegisterGradient("GatherV2", [](const OpCall& c, const V& dy, V* dx) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> params, StaticShape(c.inputs[0], "GatherV2"));
    std::vector<int64_t> rows = params;
    rows[0] = -1;
    Value values = ops::Reshape(dy[0], rows);
    Value ids = ops::Reshape(c.inputs[1], {-1});
    *dx = {ops::UnsortedSegmentSum(values, ids, params[0]), Value()};
    return Status::OK();
  });
  // TF's _UnsortedSegmentSumGrad: dy gathered by segment id, zero where the id is negative
  // (those rows were dropped). There is no SelectV2 kernel yet, so a 0/1 mask multiplies.
  RegisterGradient("UnsortedSegmentSum", [](const OpCall& c, const V& dy, V* dx) {
    const Value& ids = c.inputs[1];
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> id_shape, StaticShape(ids, "UnsortedSegmentSum"));
    Value clipped = ops::Maximum(ids, ops::ZerosLike(ids));
    Value gathered = ops::Gather(dy[0], clipped);
    std::vector<int64_t> mask_shape = id_shape;
    mask_shape.resize(static_cast<size_t>(gathered.shape().rank()), 1);
    Value keep = ops::Reshape(
        ops::Cast(ops::GreaterEqual(ids, ops::ZerosLike(ids)), gathered.dtype()), mask_shape);
    *dx = {ops::Mul(gathered, keep), Value()};
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
