// Keras shape and pooling layers without weights (channels-last): Reshape, ZeroPadding2D,
// global average/max pooling, and the merge functions Add and Concatenate.
#pragma once

#include <string>
#include <vector>

#include "graph/nn/module.h"

namespace troupe::nn {

// keras.layers.Reshape(target_shape): the batch dim is kept; one -1 in target_shape is
// resolved from the input's static shape.
class Reshape : public Layer {
 public:
  Reshape(std::string name, std::vector<int64_t> target_shape)
      : Layer(std::move(name)), target_(std::move(target_shape)) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  std::vector<int64_t> target_;
};

// keras.layers.ZeroPadding2D(((top, bottom), (left, right))) on NHWC.
class ZeroPadding2D : public Layer {
 public:
  ZeroPadding2D(std::string name, int64_t top, int64_t bottom, int64_t left, int64_t right)
      : Layer(std::move(name)), pads_{top, bottom, left, right} {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  std::vector<int64_t> pads_;
};

// GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D: reduce_mean / reduce_max over the
// spatial axes 1..rank-2 (channels-last), keeping them as size 1 when keepdims.
class GlobalPooling : public Layer {
 public:
  enum class Kind { kAvg, kMax };
  GlobalPooling(std::string name, Kind kind, int spatial_rank, bool keepdims)
      : Layer(std::move(name)), kind_(kind), spatial_rank_(spatial_rank), keepdims_(keepdims) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  Kind kind_;
  int spatial_rank_;
  bool keepdims_;
};

// keras.layers.Add: in0 + in1 + ... left to right.
Value AddAll(const std::vector<Value>& inputs);
// Relu(AddAll(inputs)), the residual join of a ResNet block followed by its ReLU: one AddRelu op
// (same bits) for two float32 inputs of one known shape on the CPU (UseCpuFusedOps), else the
// separate ops.
Value AddAllRelu(const std::vector<Value>& inputs);
// keras.layers.Concatenate(axis): tf.concat, a negative axis counted from the end.
Value ConcatenateAll(const std::vector<Value>& inputs, int64_t axis);

}  // namespace troupe::nn
