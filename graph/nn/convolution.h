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
