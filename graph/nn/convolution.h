// keras.layers.DepthwiseConv2D (channels-last): DepthwiseConv2dNative with strides, dilation
// and SAME/VALID padding, then the bias.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/nn/initializers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

struct DepthwiseConv2DOptions {
  int64_t depth_multiplier = 1;
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> dilation = {1, 1};
  std::string padding = "VALID";  // or "SAME"
  bool use_bias = true;
  bool trainable = true;
  Initializer kernel_initializer;  // default GlorotUniform(NextDefaultSeed())
  Initializer bias_initializer;    // default zeros
};

// keras.layers.DepthwiseConv2D: variables "kernel" [kh, kw, C, M] and "bias" [C*M].
class DepthwiseConv2D : public Layer {
 public:
  DepthwiseConv2D(std::string name, std::vector<int64_t> kernel_size,
                  DepthwiseConv2DOptions options = {});
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  std::vector<int64_t> kernel_size_;
  DepthwiseConv2DOptions options_;
  int64_t channels_ = 0;
  Variable kernel_, bias_;
};

}  // namespace troupe::nn

namespace troupe::nn {

// The Keras convolution family beyond Conv2D/DepthwiseConv2D (channels-last), as Keras 3's
// TF backend computes it:
// - kConv: keras.layers.Conv1D/Conv2D/Conv3D, kernel [k..., C / groups, F]. 1D runs as a
//   Conv2D on [N, 1, W, C] (tf.nn.conv1d); "CAUSAL" (1D) pads d * (k - 1) zeros in front and
//   runs VALID; groups > 1 run one convolution per group on channel slices, concatenated.
//   3D runs one Conv2D per depth tap on the depth slices it reads (batch x output depth
//   folded into the batch), summed with AddN.
// - kDepthwise: keras.layers.DepthwiseConv1D, kernel [k, C, M] (DepthwiseConv2dNative on
//   [N, 1, W, C]).
// - kSeparable: keras.layers.SeparableConv1D/2D (tf.nn.separable_conv2d): the depthwise
//   convolution with strides, padding and dilation, then a 1x1 VALID Conv2D with
//   pointwise_kernel [1..., C * M, F].
// - kTranspose: keras.layers.Conv1D/2D/3DTranspose, kernel [k..., F, C]: Conv2DBackpropInput
//   (tf.nn.conv_transpose) for the output size Keras computes (output_padding included); 3D
//   runs one Conv2DBackpropInput per depth tap, placed along depth by strides and padding.
// Then the bias, reshaped to [1..., F], is added. 3D and transposed convolutions need static
// spatial input sizes. Under a mixed-precision policy (graph/precision.h) the 3D forms sum
// their taps in float32 on operands rounded to the compute dtype and round once, as one
// Conv3D op would.
enum class ConvKind { kConv, kDepthwise, kSeparable, kTranspose };

struct ConvOptions {
  ConvKind kind = ConvKind::kConv;
  int rank = 2;                         // spatial dims: 1, 2 or 3
  int64_t filters = 0;                  // output channels (all but kDepthwise)
  std::vector<int64_t> kernel_size;     // `rank` entries
  std::vector<int64_t> strides;         // `rank` entries
  std::vector<int64_t> dilation;        // `rank` entries
  std::string padding = "VALID";        // "SAME", or "CAUSAL" (rank-1 kConv)
  std::vector<int64_t> output_padding;  // kTranspose: empty (Keras' None) or `rank` entries
  int64_t groups = 1;                   // kConv
  int64_t depth_multiplier = 1;         // kDepthwise, kSeparable
  bool use_bias = true;
  bool trainable = true;
  Initializer kernel_initializer;     // kernel / depthwise kernel; default GlorotUniform
  Initializer pointwise_initializer;  // kSeparable; default GlorotUniform
  Initializer bias_initializer;       // default zeros
};

class Convolution : public Layer {
 public:
  Convolution(std::string name, ConvOptions options);
  // "kernel" ("depthwise_kernel" for kSeparable), "pointwise_kernel", "bias".
  const Variable& kernel() const { return kernel_; }
  const Variable& pointwise_kernel() const { return pointwise_; }
  const Variable& bias() const { return bias_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  int64_t OutChannels() const;
  Value Call12(const Value& x) const;  // rank 1 and 2
  // Rank 3, on the (rounded) input and kernel.
  Value Conv3D(const Value& x, const Value& kernel) const;
  Value Transpose3D(const Value& x, const Value& kernel) const;

  ConvOptions options_;
  int64_t channels_ = 0;
  std::vector<int64_t> in_spatial_;  // static spatial sizes at build (-1 unknown)
  Variable kernel_, pointwise_, bias_;
};

}  // namespace troupe::nn
