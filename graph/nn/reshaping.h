// Keras shape and pooling layers without weights (channels-last): Reshape, ZeroPadding2D,
// global average/max pooling, the merge functions Add and Concatenate, and the functions behind
// cropping, padding, up-sampling, resizing, Permute, RepeatVector and 1D/3D pooling.
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

// Functions behind the weightless Keras shape and pooling layers (channels-last; x is
// [batch, spatial..., channels] unless said otherwise). Errors become error Values.

// Cropping1D/2D/3D: crops[2 * i], crops[2 * i + 1] removed from the start and end of spatial
// axis i + 1.
Value CropSpatial(const Value& x, const std::vector<int64_t>& crops, const std::string& what);
// ZeroPadding1D/2D/3D: pads[2 * i], pads[2 * i + 1] zeros before and after spatial axis i + 1.
Value ZeroPadSpatial(const Value& x, const std::vector<int64_t>& pads, const std::string& what);
// ops.repeat(x, n, axis) (each element n times in a row) as Pack + Reshape.
Value RepeatAxis(const Value& x, int64_t axis, int64_t n);
// UpSampling1D/2D/3D with nearest interpolation: RepeatAxis over spatial axis i + 1 by
// sizes[i], in axis order.
Value UpSampleNearest(const Value& x, const std::vector<int64_t>& sizes, const std::string& what);
// Permute(dims): transpose [0] + dims (dims 1-based, a permutation of 1..rank-1).
Value PermuteDims(const Value& x, const std::vector<int64_t>& dims);
// RepeatVector(n): [B, F] -> [B, n, F].
Value RepeatVectorOf(const Value& x, int64_t n);
// Max/AveragePooling over `pool.size()` (1, 2 or 3) spatial axes, TF's window semantics
// (padding "VALID"/"SAME"; SAME averages count only in-bounds elements). 1D runs MaxPool /
// AvgPool on [B, L, 1, C]; 3D runs the depth window as a [kd, 1] pool over [B, D, H*W, C] and
// then the [kh, kw] pool over [B*D', H, W, C] (box windows are separable for max, and for
// average since the in-bounds count factors per axis).
Value PoolSpatial(const Value& x, bool is_max, const std::vector<int64_t>& pool,
                  const std::vector<int64_t>& strides, const std::string& padding,
                  const std::string& what);

// keras.ops.image.resize(x, [height, width]) of NHWC float images (TF backend: tf.image.resize,
// antialias off, half-pixel centers): "bilinear" (ResizeBilinear's arithmetic in float32: each
// row lerped along the width, then the two rows lerped; the result cast back to x's dtype, one
// rounding under a mixed policy) or "nearest" (ResizeNearestNeighbor: index
// floor((i + 0.5) * in / out)). Composed of Transpose, Gather (constant indices) and
// elementwise ops, so it has gradients and runs where those run.
Value ResizeImages(const Value& x, int64_t height, int64_t width, const std::string& method,
                   const std::string& what);

}  // namespace troupe::nn
