#include "graph/nn/convolution.h"

#include <algorithm>

#include "graph/nn/layer_util.h"
#include "graph/ops.h"
#include "graph/precision.h"

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

namespace troupe::nn {
namespace {

std::vector<int64_t> Window4(const std::vector<int64_t>& v) {
  return v.size() == 1 ? std::vector<int64_t>{1, 1, v[0], 1}
                       : std::vector<int64_t>{1, v[0], v[1], 1};
}

// Dilations for ops::Conv2D and friends: empty when all ones.
std::vector<int64_t> Dilations4(const std::vector<int64_t>& v) {
  for (int64_t d : v) {
    if (d != 1) return Window4(v);
  }
  return {};
}

AttrMap WindowAttrs(const std::vector<int64_t>& strides, const std::string& padding,
                    const std::vector<int64_t>& dilation) {
  AttrMap attrs{{"strides", Window4(strides)}, {"padding", padding}};
  std::vector<int64_t> d = Dilations4(dilation);
  if (!d.empty()) attrs.Set("dilations", d);
  return attrs;
}

// TF's SAME/VALID output size along one dim and the padding before/after it.
struct WindowDim {
  int64_t out, before, after;
};
WindowDim Window(int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
  const int64_t ke = (k - 1) * d + 1;
  if (!same) return {in >= ke ? (in - ke) / s + 1 : 0, 0, 0};
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + ke - in, 0);
  return {out, total / 2, total - total / 2};
}

// Keras' conv-transpose output size (backend_utils._get_output_shape_given_tf_padding);
// op < 0 is output_padding None.
int64_t TransposeOut(int64_t in, int64_t k, int64_t s, int64_t d, bool same, int64_t op) {
  const int64_t ke = (k - 1) * d + 1;
  if (!same) return (in - 1) * s + ke + (op < 0 ? std::max(ke, s) - ke : op);
  return op < 0 ? in * s : (in - 1) * s + ke % 2 + op;
}

// Conv2D of NHWC x4 with HWIO k4 [kh, kw, C / groups, F]: one per group on channel slices,
// concatenated (Keras' grouped convolution).
Value GroupedConv2D(const Value& x4, const Value& k4, int64_t groups, int64_t cg, int64_t f,
                    const std::vector<int64_t>& strides, const std::string& padding,
                    const std::vector<int64_t>& dilation) {
  if (groups == 1) {
    return ops::Conv2D(x4, k4, Window4(strides), padding, Dilations4(dilation));
  }
  const int64_t fg = f / groups;
  std::vector<Value> ys;
  for (int64_t g = 0; g < groups; ++g) {
    ys.push_back(ops::Conv2D(ops::Slice(x4, {0, 0, 0, g * cg}, {-1, -1, -1, cg}),
                             ops::Slice(k4, {0, 0, 0, g * fg}, {-1, -1, -1, fg}), Window4(strides),
                             padding, Dilations4(dilation)));
  }
  return ops::Concat(ys, 3);
}

// Conv2DBackpropInput(filter, out_backprop) for an input of `sizes` [n, h, w, c].
Value BackpropInput(const Value& k4, const Value& x4, const std::vector<int64_t>& sizes,
                    const std::vector<int64_t>& strides, const std::string& padding,
                    const std::vector<int64_t>& dilation) {
  AttrMap attrs = WindowAttrs(strides, padding, dilation);
  attrs.Set("input_sizes", sizes);
  return Apply1("Conv2DBackpropInput", {k4, x4}, attrs, "conv_transpose");
}

}  // namespace

Convolution::Convolution(std::string name, ConvOptions options)
    : Layer(std::move(name)), options_(std::move(options)) {
  if (!options_.kernel_initializer) options_.kernel_initializer = GlorotUniform(NextDefaultSeed());
  if (options_.kind == ConvKind::kSeparable && !options_.pointwise_initializer) {
    options_.pointwise_initializer = GlorotUniform(NextDefaultSeed());
  }
  if (!options_.bias_initializer) options_.bias_initializer = Zeros();
}

int64_t Convolution::OutChannels() const {
  return options_.kind == ConvKind::kDepthwise ? channels_ * options_.depth_multiplier
                                               : options_.filters;
}

Status Convolution::BuildImpl(const TensorShape& input_shape) {
  const ConvOptions& o = options_;
  const std::string what = "Convolution '" + name() + "'";
  const size_t rank = static_cast<size_t>(o.rank);
  if (o.rank < 1 || o.rank > 3 || o.kernel_size.size() != rank || o.strides.size() != rank ||
      o.dilation.size() != rank || (!o.output_padding.empty() && o.output_padding.size() != rank)) {
    return InvalidArgumentError(what +
                                ": kernel_size, strides, dilation_rate (and "
                                "output_padding) need one entry per spatial dim");
  }
  if (input_shape.rank() != o.rank + 2 || input_shape.dim(o.rank + 1) < 0) {
    return InvalidArgumentError(what + " expects rank-" + std::to_string(o.rank + 2) +
                                " channels-last inputs with known channels, got " +
                                input_shape.ToString());
  }
  if ((o.kind == ConvKind::kDepthwise || o.kind == ConvKind::kSeparable) && o.rank == 3) {
    return InvalidArgumentError(what + ": depthwise and separable convolutions are 1D or 2D");
  }
  if (o.padding == "CAUSAL" && (o.kind != ConvKind::kConv || o.rank != 1)) {
    return InvalidArgumentError(what + ": causal padding is for 1D convolutions only");
  }
  channels_ = input_shape.dim(o.rank + 1);
  in_spatial_.clear();
  for (int i = 1; i <= o.rank; ++i) in_spatial_.push_back(input_shape.dim(i));
  if (o.rank == 3 || o.kind == ConvKind::kTranspose) {
    for (int64_t d : in_spatial_) {
      if (d < 0) {
        return InvalidArgumentError(what +
                                    " needs known spatial input sizes (3D and transposed "
                                    "convolutions), got " +
                                    input_shape.ToString());
      }
    }
  }
  if (o.groups < 1 || channels_ % o.groups != 0 || o.filters % o.groups != 0) {
    return InvalidArgumentError(what + ": groups " + std::to_string(o.groups) +
                                " must divide the input channels " + std::to_string(channels_) +
                                " and filters " + std::to_string(o.filters));
  }
  std::vector<int64_t> kshape = o.kernel_size;
  switch (o.kind) {
    case ConvKind::kConv:
      kshape.insert(kshape.end(), {channels_ / o.groups, o.filters});
      break;
    case ConvKind::kTranspose:
      kshape.insert(kshape.end(), {o.filters, channels_});
      break;
    case ConvKind::kDepthwise:
    case ConvKind::kSeparable:
      kshape.insert(kshape.end(), {channels_, o.depth_multiplier});
      break;
  }
  const bool separable = o.kind == ConvKind::kSeparable;
  TROUPE_ASSIGN_OR_RETURN(
      kernel_,
      AddVariable(separable ? "depthwise_kernel" : "kernel",
                  internal::InitValue(o.kernel_initializer, TensorShape(kshape)), o.trainable));
  if (separable) {
    std::vector<int64_t> pshape(rank, 1);
    pshape.insert(pshape.end(), {channels_ * o.depth_multiplier, o.filters});
    TROUPE_ASSIGN_OR_RETURN(
        pointwise_, AddVariable("pointwise_kernel",
                                internal::InitValue(o.pointwise_initializer, TensorShape(pshape)),
                                o.trainable));
  }
  if (o.use_bias) {
    TROUPE_ASSIGN_OR_RETURN(
        bias_,
        AddVariable("bias", internal::InitValue(o.bias_initializer, {OutChannels()}), o.trainable));
  }
  return Status::OK();
}

Value Convolution::Call12(const Value& x) const {
  const ConvOptions& o = options_;
  const bool one = o.rank == 1;
  std::string padding = o.padding;
  Value in = x;
  if (padding == "CAUSAL") {
    in = ops::Pad(x, {0, 0, o.dilation[0] * (o.kernel_size[0] - 1), 0, 0, 0});
    padding = "VALID";
  }
  Value x4 = one ? ops::ExpandDims(in, 1) : in;
  Value k4 = one ? ops::ExpandDims(kernel_, 0) : Value(kernel_);
  Value y;
  switch (o.kind) {
    case ConvKind::kConv:
      y = GroupedConv2D(x4, k4, o.groups, channels_ / o.groups, o.filters, o.strides, padding,
                        o.dilation);
      break;
    case ConvKind::kDepthwise:
      y = ops::DepthwiseConv2D(x4, k4, Window4(o.strides), padding, Dilations4(o.dilation));
      break;
    case ConvKind::kSeparable:
      y = ops::DepthwiseConv2D(x4, k4, Window4(o.strides), padding, Dilations4(o.dilation));
      y = ops::Conv2D(y, one ? ops::ExpandDims(pointwise_, 0) : Value(pointwise_), {1, 1, 1, 1},
                      "VALID");
      break;
    case ConvKind::kTranspose: {
      const bool same = padding == "SAME";
      std::vector<int64_t> sizes = {x.shape().dim(0), 1, 1, o.filters};
      for (int i = 0; i < o.rank; ++i) {
        sizes[static_cast<size_t>(i + 3 - o.rank)] =
            TransposeOut(in_spatial_[i], o.kernel_size[i], o.strides[i], o.dilation[i], same,
                         o.output_padding.empty() ? -1 : o.output_padding[i]);
      }
      y = BackpropInput(k4, x4, sizes, o.strides, padding, o.dilation);
      break;
    }
  }
  return one ? ops::Squeeze(y, {1}) : y;
}

// Conv3D as one Conv2D per depth tap: tap t reads padded depths t * dd + od * sd, which fold
// into the batch ([N * OD, H, W, C]); the taps' outputs are summed.
Value Convolution::Conv3D(const Value& x, const Value& kernel) const {
  const ConvOptions& o = options_;
  const bool same = o.padding == "SAME";
  const int64_t h = in_spatial_[1], w = in_spatial_[2], c = channels_;
  const int64_t kd = o.kernel_size[0], sd = o.strides[0], dd = o.dilation[0];
  const WindowDim depth = Window(in_spatial_[0], kd, sd, dd, same);
  const WindowDim oh = Window(h, o.kernel_size[1], o.strides[1], o.dilation[1], same);
  const WindowDim ow = Window(w, o.kernel_size[2], o.strides[2], o.dilation[2], same);
  if (depth.out <= 0 || oh.out <= 0 || ow.out <= 0) {
    return Value::Error(InvalidArgumentError("Convolution '" + name() + "': input " +
                                             x.shape().ToString() + " is smaller than the window"));
  }
  Value xp = x;
  if (depth.before > 0 || depth.after > 0) {
    xp = ops::Pad(x, {0, 0, depth.before, depth.after, 0, 0, 0, 0, 0, 0});
  }
  const std::vector<int64_t> s2 = {o.strides[1], o.strides[2]};
  const std::vector<int64_t> d2 = {o.dilation[1], o.dilation[2]};
  const int64_t cg = c / o.groups;
  std::vector<Value> taps;
  for (int64_t t = 0; t < kd; ++t) {
    const int64_t begin = t * dd, end = begin + (depth.out - 1) * sd + 1;
    Value slice = sd == 1 ? ops::Slice(xp, {0, begin, 0, 0, 0}, {-1, end - begin, -1, -1, -1})
                          : ops::StridedSlice(xp, {0, begin, 0, 0, 0}, {0, end, 0, 0, 0},
                                              {1, sd, 1, 1, 1}, /*begin_mask=*/29,
                                              /*end_mask=*/29);
    Value k4 = ops::Reshape(ops::Slice(kernel, {t, 0, 0, 0, 0}, {1, -1, -1, -1, -1}),
                            {o.kernel_size[1], o.kernel_size[2], cg, o.filters});
    taps.push_back(GroupedConv2D(ops::Reshape(slice, {-1, h, w, c}), k4, o.groups, cg, o.filters,
                                 s2, o.padding, d2));
  }
  return ops::Reshape(ops::AddN(taps), {-1, depth.out, oh.out, ow.out, o.filters});
}

// Conv3DTranspose as one Conv2DBackpropInput per depth tap on [N * D, H, W, C]: input depth i
// of tap t lands on padded output depth i * sd + t * dd (zeros between, by the stride), and
// the output is the padded range from TF's SAME/VALID padding for the output depth on.
Value Convolution::Transpose3D(const Value& x, const Value& kernel) const {
  const ConvOptions& o = options_;
  const bool same = o.padding == "SAME";
  const int64_t d = in_spatial_[0], h = in_spatial_[1], w = in_spatial_[2], c = channels_;
  const int64_t f = o.filters;
  std::vector<int64_t> out(3);
  for (size_t i = 0; i < 3; ++i) {
    out[i] = TransposeOut(in_spatial_[i], o.kernel_size[i], o.strides[i], o.dilation[i], same,
                          o.output_padding.empty() ? -1 : o.output_padding[i]);
  }
  const int64_t kd = o.kernel_size[0], sd = o.strides[0], dd = o.dilation[0];
  const WindowDim depth = Window(out[0], kd, sd, dd, same);
  if (depth.out != d) {
    return Value::Error(InvalidArgumentError("Convolution '" + name() + "': output depth " +
                                             std::to_string(out[0]) +
                                             " does not convolve back "
                                             "to the input depth " +
                                             std::to_string(d)));
  }
  const int64_t placed = (d - 1) * sd + 1;
  const int64_t full = std::max((d - 1) * sd + (kd - 1) * dd + 1, depth.before + out[0]);
  const int64_t batch = x.shape().dim(0);
  const std::vector<int64_t> sizes = {batch < 0 ? -1 : batch * d, out[1], out[2], f};
  Value x4 = ops::Reshape(x, {-1, h, w, c});
  std::vector<Value> taps;
  for (int64_t t = 0; t < kd; ++t) {
    Value k4 = ops::Reshape(ops::Slice(kernel, {t, 0, 0, 0, 0}, {1, -1, -1, -1, -1}),
                            {o.kernel_size[1], o.kernel_size[2], f, c});
    Value z = ops::Reshape(BackpropInput(k4, x4, sizes, {o.strides[1], o.strides[2]}, o.padding,
                                         {o.dilation[1], o.dilation[2]}),
                           {-1, d, out[1], out[2], f});
    if (sd > 1) {
      z = ops::Pad(ops::ExpandDims(z, 2), {0, 0, 0, 0, 0, sd - 1, 0, 0, 0, 0, 0, 0});
      z = ops::Reshape(z, {-1, d * sd, out[1], out[2], f});
      z = ops::Slice(z, {0, 0, 0, 0, 0}, {-1, placed, -1, -1, -1});
    }
    taps.push_back(ops::Pad(z, {0, 0, t * dd, full - t * dd - placed, 0, 0, 0, 0, 0, 0}));
  }
  return ops::Slice(ops::AddN(taps), {0, depth.before, 0, 0, 0}, {-1, out[0], -1, -1, -1});
}

Value Convolution::Call(const Value& x, bool) {
  const ConvOptions& o = options_;
  Value y;
  if (o.rank == 3) {
    // Keras runs one Conv3D op: low-precision operands, one rounding of its result. The taps
    // and their sum run in float32 on the rounded operands, rounded once at the end.
    const DType compute = CurrentComputeDType();
    const Value xr = RoundTo(x, compute), kr = RoundTo(kernel_, compute);
    y = KeepFloat32(
        [&] { return o.kind == ConvKind::kTranspose ? Transpose3D(xr, kr) : Conv3D(xr, kr); });
  } else {
    y = Call12(x);
  }
  if (o.use_bias) {
    std::vector<int64_t> shape(static_cast<size_t>(o.rank + 1), 1);
    shape.push_back(OutChannels());
    y = ops::Add(y, ops::Reshape(bias_, shape));
  }
  return y;
}

}  // namespace troupe::nn
