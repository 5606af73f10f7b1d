#include "graph/nn/convolution.h"

#include "graph/nn/layer_util.h"
#include "graph/ops.h"

namespace troupe::nn {
namespace {

// Spreads axis `axis` (0 or 1) of a [kh, kw, I, O] kernel `d` apart.
Value DilateAxis(const Value& k, int axis, int64_t d) {
  if (d == 1) return k;
  std::vector<int64_t> dims = k.shape().dims();
  const int64_t n = dims[static_cast<size_t>(axis)];
  // [.., n, 1, ..] next to zeros [.., n, d-1, ..] -> [.., n*d, ..], then drop the trailing d-1.
  Value taps = ops::ExpandDims(k, axis + 1);
  std::vector<int64_t> zero_dims = taps.shape().dims();
  zero_dims[static_cast<size_t>(axis + 1)] = d - 1;
  Value spread = ops::Concat({taps, ops::Zeros(zero_dims, k.dtype())}, axis + 1);
  std::vector<int64_t> flat = dims;
  flat[static_cast<size_t>(axis)] = n * d;
  std::vector<int64_t> begin(4, 0), size = dims;
  size[static_cast<size_t>(axis)] = (n - 1) * d + 1;
  return ops::Slice(ops::Reshape(spread, flat), begin, size);
}

}  // namespace

Value DilateKernel(const Value& kernel, const std::vector<int64_t>& dilation) {
  if (!kernel.ok()) return kernel;
  if (kernel.shape().rank() != 4 || !kernel.shape().IsFullyDefined()) {
    return Value::Error(InvalidArgumentError("DilateKernel needs a [kh, kw, I, O] kernel, got " +
                                             kernel.shape().ToString()));
  }
  const int64_t dh = dilation.empty() ? 1 : dilation[0];
  const int64_t dw = dilation.size() > 1 ? dilation[1] : dh;
  return DilateAxis(DilateAxis(kernel, 0, dh), 1, dw);
}

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
  const int64_t kh = kernel_size_[0], kw = kernel_size_[1];
  // Block-diagonal [kh, kw, C, C*M]: kernel[.., c, 1, m] * eye[c, c'] at output c'*M + m.
  Tensor eye = *Tensor::Zeros(DType::kFloat32, {1, 1, c, c, 1});
  for (int64_t i = 0; i < c; ++i) eye.data<float>()[i * c + i] = 1.0f;
  Value full = ops::Reshape(ops::Mul(ops::ExpandDims(kernel_, 3), Value(eye)), {kh, kw, c, c * m});
  full = DilateKernel(full, options_.dilation);
  const std::vector<int64_t>& s = options_.strides;
  Value y = ops::Conv2D(x, full, {1, s[0], s.size() > 1 ? s[1] : s[0], 1}, options_.padding);
  if (options_.use_bias) y = ops::Add(y, ops::Reshape(bias_, {1, 1, 1, c * m}));
  return y;
}

}  // namespace troupe::nn
