#include "graph/nn/reshaping.h"

#include "graph/nn/layer_util.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/tracing_device.h"

namespace troupe::nn {

Value Reshape::Call(const Value& x, bool) {
  const TensorShape& s = x.shape();
  std::vector<int64_t> target = target_;
  int unknown = 0;
  for (int64_t d : target) unknown += d == -1;
  if (unknown > 1) {
    return Value::Error(
        InvalidArgumentError("Reshape '" + name() + "': target_shape may hold at most one -1"));
  }
  if (unknown == 1) {
    // Resolve the -1 from the static non-batch dims so the batch dim can stay -1.
    int64_t total = 1;
    for (int i = 1; i < s.rank(); ++i) {
      if (s.dim(i) < 0) {
        return Value::Error(
            InvalidArgumentError("Reshape '" + name() +
                                 "' with a -1 in target_shape needs known non-batch input "
                                 "dims, got " +
                                 s.ToString()));
      }
      total *= s.dim(i);
    }
    int64_t known = 1;
    for (int64_t d : target) known *= d == -1 ? 1 : d;
    if (known == 0 || total % known != 0) {
      return Value::Error(InvalidArgumentError("Reshape '" + name() + "': input " + s.ToString() +
                                               " does not fit target_shape"));
    }
    for (int64_t& d : target) d = d == -1 ? total / known : d;
  }
  target.insert(target.begin(), s.unknown_rank() || s.rank() < 1 ? -1 : s.dim(0));
  return ops::Reshape(x, target);
}

Value ZeroPadding2D::Call(const Value& x, bool) {
  if (x.shape().rank() != 4) {
    return Value::Error(InvalidArgumentError("ZeroPadding2D '" + name() +
                                             "' expects NHWC inputs of rank 4, got " +
                                             x.shape().ToString()));
  }
  return ops::Pad(x, {0, 0, pads_[0], pads_[1], pads_[2], pads_[3], 0, 0});
}

Value GlobalPooling::Call(const Value& x, bool) {
  // Keras keeps ops.mean in float32 (its output is cast to the compute dtype).
  return KeepFloat32([&]() -> Value {
    if (x.shape().rank() != spatial_rank_ + 2) {
      return Value::Error(InvalidArgumentError(
          "global pooling layer '" + name() + "' expects inputs of rank " +
          std::to_string(spatial_rank_ + 2) + " (channels last), got " + x.shape().ToString()));
    }
    std::vector<int64_t> axes;
    for (int i = 1; i <= spatial_rank_; ++i) axes.push_back(i);
    return kind_ == Kind::kAvg ? ops::Mean(x, axes, keepdims_) : ops::Max(x, axes, keepdims_);
  });
}

Value AddAll(const std::vector<Value>& inputs) {
  if (inputs.size() < 2) {
    return Value::Error(
        InvalidArgumentError("Add needs at least 2 inputs, got " + std::to_string(inputs.size())));
  }
  Value sum = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) sum = ops::Add(sum, inputs[i]);
  return sum;
}

Value AddAllRelu(const std::vector<Value>& inputs) {
  if (inputs.size() == 2 && inputs[0].ok() && inputs[1].ok() &&
      inputs[0].dtype() == DType::kFloat32 && inputs[1].dtype() == DType::kFloat32 &&
      inputs[0].shape().IsFullyDefined() && inputs[0].shape() == inputs[1].shape() &&
      UseCpuFusedOps()) {
    return Apply1("AddRelu", {inputs[0], inputs[1]}, {}, "AddRelu");
  }
  return ops::Relu(AddAll(inputs));
}

Value ConcatenateAll(const std::vector<Value>& inputs, int64_t axis) {
  if (inputs.size() < 2) {
    return Value::Error(InvalidArgumentError("Concatenate needs at least 2 inputs, got " +
                                             std::to_string(inputs.size())));
  }
  Result<int64_t> a = internal::NormalizeAxis(axis, inputs[0].shape().rank(), "Concatenate");
  if (!a.ok()) return Value::Error(a.status());
  return ops::Concat(inputs, *a);
}

}  // namespace troupe::nn
