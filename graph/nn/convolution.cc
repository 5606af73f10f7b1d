#include "graph/nn/convolution.h"

#include "graph/nn/layer_util.h"
#include "graph/ops.h"

namespace troupe::nn {

DepthwiseConv2D::DepthwiseConv2D(std::string name, std::vector<int64_t> kernel_size,
                                 DepthwiseConv2DOptions options)
    : Layer(std::move(name)), kernel_size_(std::move(kernel_size)), options_(std::move(options)) {
  if (kernel_size_.size() == 1) kernel_size_.push_back(kernel_size_[0]);
  if (!options_.kernel_initializer) options_.kernel_initializer = GlorotUniform(NextDefaultSeed());
  if (!options_.bias_initializer) options_.bias_initializer = Zeros();
}

Status DepthwiseConv2D::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.rank() != 4 || input_shape.dim(3) < 0) {
    return InvalidArgumentError("DepthwiseConv2D expects NHWC inputs with known channels, got " +
                                input_shape.ToString());
  }
  if (kernel_size_.size() != 2 || options_.depth_multiplier <= 0) {
    return InvalidArgumentError(
        "DepthwiseConv2D needs a 2-entry kernel_size and a positive depth_multiplier");
  }
  channels_ = input_shape.dim(3);
  const int64_t m = options_.depth_multiplier;
  TROUPE_ASSIGN_OR_RETURN(
      kernel_, AddVariable("kernel",
                           internal::InitValue(options_.kernel_initializer,
                                               {kernel_size_[0], kernel_size_[1], channels_, m}),
                           options_.trainable));
  if (options_.use_bias) {
    TROUPE_ASSIGN_OR_RETURN(
        bias_, AddVariable("bias", internal::InitValue(options_.bias_initializer, {channels_ * m}),
                           options_.trainable));
  }
  return Status::OK();
}

Value DepthwiseConv2D::Call(const Value& x, bool) {
  const int64_t c = channels_, m = options_.depth_multiplier;
  const std::vector<int64_t>& s = options_.strides;
  const std::vector<int64_t>& d = options_.dilation;
  Value y = ops::DepthwiseConv2D(x, kernel_, {1, s[0], s.size() > 1 ? s[1] : s[0], 1},
                                 options_.padding, {1, d[0], d.size() > 1 ? d[1] : d[0], 1});
  if (options_.use_bias) y = ops::Add(y, ops::Reshape(bias_, {1, 1, 1, c * m}));
  return y;
}

}  // namespace troupe::nn
