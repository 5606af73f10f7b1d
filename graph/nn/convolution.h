// Convolutions beyond the plain Conv2D kernel, composed from existing ops until the
// DepthwiseConv2dNative kernel and Conv2D's dilations attribute land:
// - DilateKernel: a dilated convolution equals a convolution with the kernel's taps spread
//   dilation apart and zeros between them (the same padding for SAME, since TF pads for the
//   effective size (k - 1) * d + 1); the zero taps add exact zeros to every sum.
// - DepthwiseConv2D: a Conv2D whose [kh, kw, C, C*M] kernel is block diagonal (input channel c
//   feeds only outputs c*M .. c*M+M-1, as tf.nn.depthwise_conv2d orders them).
// Autodiff through the constructions gives the gradients of the compact kernels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/nn/initializers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

// kernel [kh, kw, I, O] -> [(kh-1)*dh+1, (kw-1)*dw+1, I, O] with zeros between the taps.
Value DilateKernel(const Value& kernel, const std::vector<int64_t>& dilation);

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
